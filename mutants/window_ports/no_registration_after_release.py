"""No registration after a released entry (issue 38).

A port whose key of block i is chained from block i - 1's record (a hash chain kept on the block)
cannot register a block once an entry before it is -1: the record went with the released block.
The contract registers it all the same ("A key does not need the keys before it"). An entry is
released before the next block fills only when W <= B (the release of index i - 1 needs the
shortest layer at iB + W - 1, before block i is full at (i + 1)B).
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks
from paged.cache import _Seq
from paged.prefix import PrefixIndex

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose registration stops at a released entry."""

    def _register(self, index: PrefixIndex, seq: _Seq, gi: int, full: int) -> None:
        bs, nodes, table = self.block_size, seq.nodes[gi], seq.tables[gi]
        for i in range(len(nodes), full):
            parent = nodes[i - 1] if i else index.root
            if parent.dead:
                nodes[:] = index.path(seq.tokens, i)
                parent = nodes[i - 1]
            node = index.child(parent, seq.tokens[i * bs : (i + 1) * bs])
            nodes.append(node)
            if -1 not in table[:i]:
                index.register(node, table[i])
