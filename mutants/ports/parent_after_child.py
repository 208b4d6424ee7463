"""A deliberately broken implementation: fork checks the child before the parent.

CONTRACT.md, "Which error wins": an unknown parent onto a live child is unknown_sequence; this cache
answers invalid_argument. The explorer sends that call and fails it in 2 calls:
meta_tests/explorer/test_explorer.py::test_two_faults_in_one_call_are_tried.
"""

from __future__ import annotations

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose fork refuses a live child first."""

    def fork(self, parent: int, child: int) -> None:
        if child in self._seqs:
            raise ValueError(f"sequence {child} is already live")
        super().fork(parent, child)
