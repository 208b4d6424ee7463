"""A reference paged KV cache: float16 blocks, block tables, reference counts, copy on write."""

from .cache import PagedKVCache
from .errors import OutOfBlocks
from .protocol import KVCacheProtocol

__all__ = ["KVCacheProtocol", "OutOfBlocks", "PagedKVCache"]
