"""Broken on purpose (issue 35, d): a sliding window off by one once W >= 10.

Everything else is the real `paged` cache; for W = 2 .. 9 its window is right. From W = 10 on it
keeps one position more than the contract's W - 1 (it attends to W positions before the next
token, not W - 1): gather returns one position too many and each block is released one position
late. The suite's machines drew W from 2 to 9 and its vectors used W <= 7, so it passed.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks
from paged.groups import SlidingWindow

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose window is W + 1 for W >= 10."""

    def __init__(
        self, num_blocks: int, block_size: int, n_layers: int, n_kv_heads: int, d_head: int, *,
        prefix_caching: bool = False, sliding_window: int | None = None,
    ) -> None:
        super().__init__(num_blocks, block_size, n_layers, n_kv_heads, d_head, prefix_caching=prefix_caching, sliding_window=sliding_window)
        for group in self._groups:  # paged/groups.py: each window group's W, and the blocks a hit needs
            if isinstance(group, SlidingWindow) and group.window is not None and group.window >= 10:
                group.window += 1
                group.need = -(-(group.window - 1) // block_size)
