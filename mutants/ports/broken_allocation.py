"""A deliberately broken implementation, for showing that `ci/gate --impl` fails readably.

It is the real `paged` cache with one contract breach: blocks are handed out from the top
(the highest-numbered free block first) instead of the lowest. Everything else (values,
lengths, counts, errors) is right, so only the pinned allocation order gives it away.
It uses the real cache through its public calls and renumbers the ids it reports
(block b is reported as N-1-b), which is exactly what a top-down allocator would show.

    PYTHONPATH=mutants/ports ci/gate --impl broken_allocation      # must FAIL
    PYTHONPATH=mutants/ports pytest -n auto --impl broken_allocation

Never used by the real suite; a port's CI points --impl at its own bindings instead.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, allocating from the top of the pool (a contract breach)."""

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        table = super().block_table(seq_id, layer)
        return (self.num_blocks - 1 - table).astype(np.int32)
