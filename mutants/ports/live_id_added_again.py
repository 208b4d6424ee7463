"""A deliberately broken implementation: adding a live id again starts it afresh instead of raising ValueError.

The explorer fails it in 2 calls (`add_seq(0)` twice: ok where the contract says invalid_argument):
meta_tests/explorer/test_explorer.py::test_a_wrong_error_kind_is_a_two_call_failure.
"""

from __future__ import annotations

from collections.abc import Iterable

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, freeing a live id (0 .. 2) that is added again."""

    def add_seq(self, seq_id: int, tokens: Iterable[int] = ()) -> int:
        if seq_id in [s for s in range(3) if self._live(s)]:
            self.free(seq_id)
        return super().add_seq(seq_id, tokens)

    def _live(self, s: int) -> bool:
        try:
            self.seq_len(s)
        except KeyError:
            return False
        return True
