"""No registration after a released entry (issue 38).

A port whose key of block i is chained from block i - 1's record (a hash chain kept on the block)
cannot register a block once an entry before it is -1: the record went with the released block.
The contract registers it all the same ("A key does not need the keys before it"). An entry is
released before the next block fills only when W <= B (the release of index i - 1 needs the
shortest layer at iB + W - 1, before block i is full at (i + 1)B).
"""

from __future__ import annotations

from typing import Any, Sequence

import paged
from paged import OutOfBlocks
from paged.groups import FullAttention, Group, SlidingWindow

__all__ = ["OutOfBlocks", "PagedKVCache"]


class StopsAtARelease(Group):
    """A group whose registration skips every block after a released entry."""

    def register(self, sid: int, tokens: Sequence[int], lens: Sequence[int]) -> None:
        bs, index, nodes, table = self.block_size, self.index, self.nodes[sid], self.tables[sid]
        for i in range(len(nodes), self.shortest(lens) // bs):
            parent = nodes[i - 1] if i else index.root
            if parent.dead:
                nodes[:] = index.path(tokens, i)
                parent = nodes[i - 1]
            node = index.child(parent, tokens[i * bs : (i + 1) * bs])
            nodes.append(node)
            if -1 not in table[:i]:
                index.register(node, table[i])


class StopsFullAttention(StopsAtARelease, FullAttention):
    pass


class StopsSlidingWindow(StopsAtARelease, SlidingWindow):
    pass


STOPS: dict[type[Group], type[Group]] = {FullAttention: StopsFullAttention, SlidingWindow: StopsSlidingWindow}


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose registration stops at a released entry."""

    def __init__(
        self, *sizes: Any, prefix_caching: bool = False, sliding_window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window, layer_windows=layer_windows)
        for group in self._groups:  # paged/groups.py: each group's registration
            group.__class__ = STOPS[type(group)]
