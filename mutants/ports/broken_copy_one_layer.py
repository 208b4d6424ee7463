"""A deliberately broken implementation: copy on write copies only layer 0 of a shared block.

Everything else is the real `paged` cache. A child that writes into a shared block gets a
copy whose other layers are zeros, so its earlier positions in those layers read back
wrong; tables, lengths and counts are all right. This was the slowest bug for the gate to
report before it stopped shrinking every failure (176 s), so it is the timing example:

    PYTHONPATH=mutants/ports ci/gate --impl broken_copy_one_layer                               # FAIL
    PYTHONPATH=mutants/ports ci/gate --impl 'exec:python -m wire.driver --impl broken_copy_one_layer'  # FAIL, over the wire

It reaches into the reference cache's internals (its pools); a port never does this, and
the suite never does either.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose copy on write forgets every layer but the first."""

    def _copy_block(self, block: int) -> int:
        copy = super()._copy_block(block)
        self._k[1:, :, copy] = 0
        self._v[1:, :, copy] = 0
        return copy
