"""A deliberately broken implementation: state kept for a sequence id after it is freed.

Everything else is the real `paged` cache. The cache remembers the ids it has freed (as an engine
that keeps per-request state in a table keyed by the request id, and forgets to clear it on free),
and the first append of an id freed and then added again writes K where V goes and V where K goes.
Its model state after `add_seq(0); free(0)` is the empty cache's, so an explorer that continues only
one path into each model state never sees it; the exhaustive explorer walks every sequence of up to 4
accepted calls and fails it in 4 (issue 26):

    PYTHONPATH=mutants/ports ci/gate --exhaustive --impl stale_freed_id     # FAIL: add_seq(0); free(0); add_seq(0); append(0, 0, T=1)

It reaches into nothing of the reference cache but its public calls.
"""

from __future__ import annotations

from typing import Any, Iterable

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose first append to a freed id added again swaps K and V."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.freed: set[int] = set()  # ids freed once: never cleared (the bug)
        self.stale: set[int] = set()  # ids added again since, whose next append swaps K and V

    def free(self, seq_id: int) -> None:
        super().free(seq_id)
        self.freed.add(seq_id)

    def add_seq(self, seq_id: int, tokens: Iterable[int] = ()) -> int:
        served = super().add_seq(seq_id, tokens)
        if seq_id in self.freed:
            self.stale.add(seq_id)
        return served

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        if seq_id in self.stale:
            super().append(seq_id, layer, v, k)
            self.stale.discard(seq_id)
        else:
            super().append(seq_id, layer, k, v)
