"""Models simple enough to trust, for checking the paged cache. Never imports `paged`."""

from .contiguous import ContiguousKVCache
from .decoder import ToyDecoder
from .model import ModelKVCache, OutOfBlocks

__all__ = ["ContiguousKVCache", "ModelKVCache", "OutOfBlocks", "ToyDecoder"]
