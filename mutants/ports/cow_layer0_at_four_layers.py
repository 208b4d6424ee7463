"""Broken on purpose (issue 35, b): copy on write copies layer 0 only when the cache has L >= 4 layers.

Everything else is the real `paged` cache; with 1 to 3 layers its copy is whole. A child that
writes into a shared block reads its earlier positions back as zeros in every layer but the first.
It reaches into the reference cache's pools, as mutants/ports/broken_copy_one_layer.py does.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose copy on write forgets every layer but the first once L >= 4."""

    def _copy_block(self, block: int) -> int:
        copy = super()._copy_block(block)
        if self.n_layers >= 4:
            self._k[1:, :, copy] = 0
            self._v[1:, :, copy] = 0
        return copy
