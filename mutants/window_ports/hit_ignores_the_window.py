"""A windowed prefix hit that ignores the window (issue 38).

The contract serves the largest k whose window's `need` keys are registered, the entries before
them -1; this cache takes the run of registered keys from block 0, as without the window, and
holds every block of it (its next append releases those out of the window).
"""

from __future__ import annotations

from typing import Any, Sequence

import paged
from paged import OutOfBlocks
from paged.prefix import Node, PrefixIndex

__all__ = ["OutOfBlocks", "PagedKVCache"]


class RunFromTheFirstBlock(PrefixIndex):
    def hit(self, tokens: Sequence[int], need: int | None, most: int) -> tuple[list[Node], int]:
        return super().hit(tokens, None, most)


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose hit is full attention's even with a window."""

    def __init__(self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window)
        for group in self._groups:  # paged/groups.py: each group's own prefix index
            if group.index is not None:
                group.index.__class__ = RunFromTheFirstBlock
