"""The block allocator: reference counts, a free pool that hands out the lowest id, and, with
prefix caching, the cached blocks in the order they became cached.

One allocator serves the whole cache. `allocate` always returns the lowest-numbered free
block (a binary heap keeps that O(log N)), which pins the tables a port must reproduce;
when none is free, it evicts the block that became cached longest ago, in O(1) (an
OrderedDict is a hash map threaded by a doubly linked list, as vLLM's free block queue).
"""

import heapq
from collections import OrderedDict
from typing import Callable

from .errors import BlockAccountingError


class BlockAllocator:
    """Reference-counted ownership of block ids 0 .. num_blocks-1.

    Invariants (kept by these methods, the only code that touches `_free`, `_cached`, `_refs`):

    - `_refs[b]` is the number of holders of block b, never below 0.
    - Every block with no holder is in exactly one of `_free` (a heap: `_free[0]` is the
      lowest free id) and `_cached` (prefix caching: it keeps its K, V and key; oldest first);
      no block with a holder is in either. Hence free + cached + (blocks with a holder) == N.
    - `evictions` counts the cached blocks `allocate` has taken; `on_evict` is told of each,
      so that its key goes with it.

    A caller that would break them gets a `BlockAccountingError` naming its bug, and the
    counts stay as they were: `allocate` with no block to take (check `num_free` first),
    `incref` of a block with no holder (`acquire` takes a cached one), `acquire` of a free
    block, `unshare` of a block that is not shared, `decref` of a block with no holder
    (released more often than taken).
    """

    __slots__ = ("_free", "_cached", "_refs", "evictions", "_on_evict")

    def __init__(self, num_blocks: int, on_evict: Callable[[int], None] | None = None) -> None:
        self._free: list[int] = list(range(num_blocks))  # sorted, hence a valid heap
        self._cached: OrderedDict[int, None] = OrderedDict()
        self._refs: list[int] = [0] * num_blocks
        self.evictions = 0
        self._on_evict = on_evict

    @property
    def num_free(self) -> int:
        """The blocks an allocation can take: free and cached."""
        return len(self._free) + len(self._cached)

    @property
    def num_cached(self) -> int:
        return len(self._cached)

    def allocate(self) -> int:
        """Take the lowest-numbered free block, else evict the oldest cached one; it gets one holder.

        The caller checks `num_free` first.
        """
        if self._free:
            block = heapq.heappop(self._free)
        elif self._cached:
            block = next(iter(self._cached))  # the oldest
            del self._cached[block]
            self.evictions += 1
            if self._on_evict is not None:
                self._on_evict(block)
        else:
            raise BlockAccountingError("allocate() with no free block and none cached: the caller must check num_free first")
        if self._refs[block]:
            raise BlockAccountingError(f"free block {block} has {self._refs[block]} holders: the counts are corrupt")
        self._refs[block] = 1
        return block

    def holders(self, block: int) -> int:
        """The number of holders of `block` (0: free or cached)."""
        return self._refs[block]

    def shared(self, table: list[int], first: int, stop: int) -> list[int]:
        """The indices i in first .. stop-1 that `table` has (i < len(table)) whose block has more
        than one holder."""
        return [i for i in range(first, min(stop, len(table))) if self._refs[table[i]] > 1]

    def incref(self, block: int) -> None:
        """One more holder of a block that already has one (a fork)."""
        if not self._refs[block]:
            raise BlockAccountingError(f"incref({block}): block {block} is free or cached; take it with allocate() or acquire()")
        self._refs[block] += 1

    def acquire(self, block: int) -> None:
        """One more holder of a registered block (a prefix-cache hit): a cached one leaves the eviction order."""
        if not self._refs[block]:
            if block not in self._cached:
                raise BlockAccountingError(f"acquire({block}): block {block} is free, not cached")
            del self._cached[block]
        self._refs[block] += 1

    def unshare(self, block: int) -> None:
        """Copy on write moved one holder of a shared block to a copy: one holder fewer, never the last."""
        if self._refs[block] < 2:
            raise BlockAccountingError(f"unshare({block}): block {block} has {self._refs[block]} holder(s), it is not shared")
        self._refs[block] -= 1

    def decref(self, block: int, keep: bool) -> None:
        """Drop one holder. The last holder's release returns the block to the free pool or, with
        `keep` (it has a key), makes it cached, newest in the eviction order."""
        count = self._refs[block]
        if not count:
            raise BlockAccountingError(f"decref({block}): block {block} has no holder (released more often than taken)")
        self._refs[block] = count - 1
        if count == 1:
            if keep:
                self._cached[block] = None
            else:
                heapq.heappush(self._free, block)
