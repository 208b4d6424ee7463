"""A reference paged KV cache: float16 blocks, block tables, reference counts, copy on write.

`cache.py` is the reference, every call's general path; `PagedKVCache` here is that class with the
fast paths of `fast.py`, which change nothing a caller can observe.
"""

from .errors import OutOfBlocks
from .fast import PagedKVCache
from .protocol import KVCacheProtocol

__all__ = ["KVCacheProtocol", "OutOfBlocks", "PagedKVCache"]
