"""A broken port that keeps state outside the cache object: the ids each cache has freed live in a
module-level WeakKeyDictionary keyed by the cache (as a port might keep per-cache bookkeeping in a side
table), and the first append to an id freed and added again writes K where V goes and V where K goes.

`add_seq(0); free(0); add_seq(0); append(0, 0, T=1)` shows it on a cache that made those calls; a
copy of the cache object (a pickle, say) carries no entry in the side table and behaves as a fresh
cache. `paged-gate --exhaustive` must FAIL it: within the tree depth its states are the calls replayed.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]

FREED: "weakref.WeakKeyDictionary[Any, set[int]]" = weakref.WeakKeyDictionary()  # cache -> ids it freed (never cleared: the bug)
STALE: "weakref.WeakKeyDictionary[Any, set[int]]" = weakref.WeakKeyDictionary()  # cache -> ids added again since, whose next append swaps K and V


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose first append to a freed id added again swaps K and V."""

    def free(self, seq_id: int) -> None:
        super().free(seq_id)
        FREED.setdefault(self, set()).add(seq_id)

    def add_seq(self, seq_id: int, tokens: Iterable[int] = ()) -> int:
        served = super().add_seq(seq_id, tokens)
        if seq_id in FREED.get(self, ()):
            STALE.setdefault(self, set()).add(seq_id)
        return served

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        stale = STALE.get(self, set())
        if seq_id in stale:
            stale.discard(seq_id)
            k, v = v, k
        super().append(seq_id, layer, k, v)
