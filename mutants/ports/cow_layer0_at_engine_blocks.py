"""Broken on purpose (issue 35, a): copy on write copies layer 0 only when B is 8, 16 or 32.

Everything else is the real `paged` cache; at every other block size its copy is whole. A child
that writes into a shared block of an engine's block size reads its earlier positions back as
zeros in every layer but the first. The small geometries of the suite never showed it.
It reaches into the reference cache's pools, as mutants/ports/broken_copy_one_layer.py does.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose copy on write forgets every layer but the first at B = 8, 16, 32."""

    def _copy_block(self, block: int) -> int:
        copy = super()._copy_block(block)
        if self.block_size in (8, 16, 32):
            self._k[1:, :, copy] = 0
            self._v[1:, :, copy] = 0
        return copy
