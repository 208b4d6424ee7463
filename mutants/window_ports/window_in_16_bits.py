"""The sliding window W kept in 16 bits: W = 65,538 acts as W = 2 (issue 38).

With N=4, B=1, W=65,538 and three positions, the contract's table is 0, 1, 2 and gather returns 3
positions; this cache's is -1, -1, 2 and 1 position. Everything else is the real `paged` cache.
"""

from __future__ import annotations

from typing import Any

import paged
from paged import OutOfBlocks
from paged.groups import SlidingWindow

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose window is stored as a u16 would hold it (after the range check)."""

    def __init__(self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window)
        for group in self._groups:  # paged/groups.py: each window group's W, and the blocks a hit needs
            if isinstance(group, SlidingWindow) and group.window is not None:
                group.window &= 0xFFFF
                group.need = -(-(group.window - 1) // self.block_size)
