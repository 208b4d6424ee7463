"""A deliberately broken implementation: the slot of position p computed as `p & (B - 1)`, not `p % B`.

Everything else is the real `paged` cache. After each append, every position written is also written
to slot `p & (B - 1)` of its block, as a port that computes the slot with a mask would (a Rust port
in issue 29 did). For a block size that is a power of two the two are one slot, and nothing differs;
for B = 3, position 1 lands in slot 0 over position 0. The exhaustive explorer's B = 3 geometry fails
it in two calls:

    PYTHONPATH=mutants/ports ci/gate --exhaustive --impl slot_by_mask       # FAIL: add_seq(0); append(0, 0, T=2)

It reaches into the reference cache's internals (its pools and tables); a port never does this, and
the suite never does either.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose writes also land in slot p & (B - 1) of position p's block."""

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        try:
            start = self.seq_len(seq_id, layer)
        except Exception:  # noqa: BLE001 - the append below raises the contract's error
            start = 0
        super().append(seq_id, layer, k, v)
        k_pool, v_pool = self._layers[layer]
        table, b = self._group(layer).tables[seq_id], self.block_size
        k16, v16 = np.asarray(k, np.float16), np.asarray(v, np.float16)
        for i, p in enumerate(range(start, start + k16.shape[1])):
            k_pool[:, table[p // b], p & (b - 1)] = k16[:, i]
            v_pool[:, table[p // b], p & (b - 1)] = v16[:, i]
