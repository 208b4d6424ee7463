"""Blocks out of every layer's window released only after an append to the last layer (issue 38).

A port that releases "once a decode step is done" (its last layer written) misses the release an
append to another layer makes due: `add_seq(0); append(0, 1, T=3); append(0, 0, T=3)` with B=2, W=2
must release block 0 at its end (the shortest layer, layer 0, reaches 3), and this cache keeps it.
"""

from __future__ import annotations

from typing import Any, Sequence

import paged
from paged import OutOfBlocks
from paged.groups import FullAttention, Group, SlidingWindow

__all__ = ["OutOfBlocks", "PagedKVCache"]


class AfterTheLastLayer(Group):
    """A group whose release runs only while the cache writes its last layer."""

    writing_the_last_layer = False

    def release(self, sid: int, lens: Sequence[int]) -> None:
        if self.writing_the_last_layer:
            super().release(sid, lens)  # type: ignore[safe-super]


class LateFullAttention(AfterTheLastLayer, FullAttention):
    pass


class LateSlidingWindow(AfterTheLastLayer, SlidingWindow):
    pass


LATE: dict[type[Group], type[Group]] = {FullAttention: LateFullAttention, SlidingWindow: LateSlidingWindow}


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose release runs only at the end of an append to layer L - 1."""

    def __init__(
        self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window, layer_windows=layer_windows)
        for group in self._groups:  # paged/groups.py: each group's release
            group.__class__ = LATE[type(group)]

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        for group in self._groups:
            group.writing_the_last_layer = layer == self.n_layers - 1  # type: ignore[attr-defined]
        try:
            super().append(seq_id, layer, k, v)
        finally:
            for group in self._groups:
                group.writing_the_last_layer = False  # type: ignore[attr-defined]
