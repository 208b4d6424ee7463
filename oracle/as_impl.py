"""The model as an implementation under test: `pytest --impl oracle.as_impl`.

Running the suite against this second, independent implementation of the contract
shows that the suite tests behaviour, not the internals of `paged`.
"""

from .model import ModelKVCache as PagedKVCache
from .model import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]
