"""A deliberately broken implementation, wrong under every profile: block b reported as the number of held
blocks below it.

Lowest-free's ids until a free leaves a hole below a block still held; that block's id then changes while it
is held, which `allocation=any`'s renaming refuses too (each block keeps one id for its lifetime).
meta_tests/explorer/test_explorer.py::test_also_renamed_checks_every_table_both_ways shows the walk's renaming
check refuse it, in as few calls as a walk under allocation=any.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, reporting block b as the count of held blocks below it."""

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        held = sorted({b for table in self._groups[0].tables.values() for b in table})
        return np.array([held.index(b) for b in super().block_table(seq_id, layer)], dtype=np.int32)
