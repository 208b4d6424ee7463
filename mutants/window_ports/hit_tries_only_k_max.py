"""A windowed prefix hit that tries only k_max (issue 38).

The contract serves the largest k, need <= k <= k_max, whose last `need` keys are registered; this
cache looks at k = k_max alone and, when one of its window's keys is missing, falls back to the run
of registered keys from block 0, as without the window. It differs once an early key is gone
(evicted) while a shorter k's window is still registered.
"""

from __future__ import annotations

from typing import Any, Sequence

import paged
from paged import OutOfBlocks
from paged.prefix import Node, PrefixIndex

__all__ = ["OutOfBlocks", "PagedKVCache"]


class KMaxOnly(PrefixIndex):
    def hit(self, tokens: Sequence[int], need: int | None, most: int) -> tuple[list[Node], int]:
        if need is None:
            return super().hit(tokens, None, most)
        bs, node, path = self.block_size, self.root, list[Node]()
        while len(path) < most:
            child = node.children.get(tuple(tokens[len(path) * bs : (len(path) + 1) * bs]))
            if child is None:
                break
            path.append(child)
            node = child
        k_max = (len(tokens) - 1) // bs  # the prompt's, whatever `most` the fixed point asks for
        if need <= k_max == len(path) and all(n.block is not None for n in path[k_max - need :]):
            return path, k_max - need
        return super().hit(tokens, None, most)


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose windowed hit tries k_max only."""

    def __init__(self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window)
        for group in self._groups:  # paged/groups.py: each group's own prefix index
            if group.index is not None:
                group.index.__class__ = KMaxOnly
