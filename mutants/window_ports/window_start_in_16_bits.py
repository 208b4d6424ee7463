"""The window's start m - W + 1 kept in 16 bits when releasing (issue 38).

N=70,000, B=1, W=2, one append of 65,600 positions: the contract keeps one block (used=1); this
cache releases only (65,599 mod 2^16) // B = 63 entries and keeps 65,537 blocks.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks
from paged.cache import _Seq

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose release computes the window's start as a u16."""

    def _release(self, seq: _Seq, gi: int) -> None:
        group, table = self._groups[gi], seq.tables[gi]
        assert group.window is not None
        cut = (max(0, min(seq.lens[i] for i in group.layers) - group.window + 1) & 0xFFFF) // self.block_size
        newly = []
        for i in range(cut - 1, -1, -1):
            if table[i] == -1:
                break
            newly.append(table[i])
            table[i] = -1
        self._let_go(newly)
