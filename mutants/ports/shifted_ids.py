"""A deliberately broken implementation: every block id reported one too high (1 .. N in a pool of N).

It is the real `paged` cache, declaring `allocation=any`, whose `block_table` adds 1 to every
id: exactly a vLLM adapter that forgot to shift its ids past vLLM's reserved null block. Up to
a renaming, its tables are right (sharing, and each block's id for its lifetime); but the id
of the pool's last block, N, is no block of the pool, which CONTRACT.md forbids under every
profile, so the gate fails it with a message naming the pool's range, 0..N-1.

    PYTHONPATH=mutants/ports ci/gate --impl shifted_ids --profile allocation=any   # must FAIL

Never used by the real suite; a port's CI points --impl at its own bindings instead.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE"]

PROFILE = "allocation=any"


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, reporting block b as b + 1 (a contract breach)."""

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        return (super().block_table(seq_id, layer) + 1).astype(np.int32)
