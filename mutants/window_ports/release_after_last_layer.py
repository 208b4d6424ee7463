"""Blocks out of every layer's window released only after an append to the last layer (issue 38).

A port that releases "once a decode step is done" (its last layer written) misses the release an
append to another layer makes due: `add_seq(0); append(0, 1, T=3); append(0, 0, T=3)` with B=2, W=2
must release block 0 at its end (the shortest layer, layer 0, reaches 3), and this cache keeps it.
"""

from __future__ import annotations

from typing import Any

import paged
from paged import OutOfBlocks
from paged.cache import _Seq

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose release runs only at the end of an append to layer L - 1."""

    _writing = -1  # the layer of the append in progress

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        self._writing = layer
        try:
            super().append(seq_id, layer, k, v)
        finally:
            self._writing = -1

    def _release(self, seq: _Seq, gi: int) -> None:
        if self._writing == self.n_layers - 1:
            super()._release(seq, gi)
