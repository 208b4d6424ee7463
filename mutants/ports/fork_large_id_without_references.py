"""Broken on purpose (issue 35, f): a fork that names an id of 2^32 or more takes no references.

Everything else is the real `paged` cache. When the parent's or the child's id is at least 2^32 (as
a port that keeps its reference counts in a table indexed by a 32-bit id might skip them), the
child shares the parent's blocks without adding itself as a holder: once the parent is freed the
blocks go back to the pool while the child still holds them. The only fork of such an id in the
suite checked the child and ended, so it passed.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose forks of ids >= 2^32 share blocks without counting the child."""

    def fork(self, parent: int, child: int) -> None:
        super().fork(parent, child)
        if max(int(parent), int(child)) >= 2**32:
            for group in self._groups:  # paged/groups.py: each group's table of the child
                for block in group.tables[int(child)]:
                    if block >= 0:
                        self._alloc.decref(block, False)  # undo the child's reference (the parent's keeps it above 0)
