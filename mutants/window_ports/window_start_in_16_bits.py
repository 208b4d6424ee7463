"""The window's start m - W + 1 kept in 16 bits when releasing (issue 38).

N=70,000, B=1, W=2, one append of 65,600 positions: the contract keeps one block (used=1); this
cache releases only (65,599 mod 2^16) // B = 63 entries and keeps 65,537 blocks.
"""

from __future__ import annotations

from typing import Any, Sequence

import paged
from paged import OutOfBlocks
from paged.groups import SlidingWindow

__all__ = ["OutOfBlocks", "PagedKVCache"]


class Start16(SlidingWindow):
    """A window group whose release computes the window's start as a u16."""

    def released_before(self, shortest: int) -> int:
        return (max(0, shortest - self.window + 1) & 0xFFFF) // self.block_size


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose release computes the window's start as a u16."""

    def __init__(
        self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window, layer_windows=layer_windows)
        for group in self._groups:  # paged/groups.py: each window group's release
            if isinstance(group, SlidingWindow):
                group.__class__ = Start16
