"""A correct cache with nano-vllm's free order, for showing that the suite follows a port's profile.

It is the real `paged` cache with another allocator: every block with no holder, cached or
not, waits in one queue in the order it was released (a fresh pool queues 0, 1, 2, ...),
and an allocation takes the front, evicting it if it is cached. That is nano-vllm's
`BlockManager` (a deque: `popleft` to allocate, `append` on release). After the first free
its ids differ from the lowest-free order, so it fails the default profile and passes the
one it declares:

    PYTHONPATH=ci/examples ci/gate --impl free_queue                                  # PASS (its PROFILE)
    PYTHONPATH=ci/examples ci/gate --impl free_queue --profile allocation=lowest-free  # FAIL: block ids differ

Never used by the real suite.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import paged
from paged import OutOfBlocks
from paged.allocator import BlockAllocator
from paged.errors import BlockAccountingError

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE"]

PROFILE = "allocation=any,reuse=release-order"


class FreeQueueAllocator(BlockAllocator):
    """BlockAllocator with one queue, in release order, of every block that has no holder."""

    __slots__ = ("_queue",)

    def __init__(self, num_blocks: int, on_evict: Callable[[int], None] | None = None) -> None:
        super().__init__(num_blocks, on_evict)
        self._free = []  # unused: the queue holds the free blocks and the cached ones alike
        self._queue: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))

    @property
    def num_free(self) -> int:
        return len(self._queue)

    def allocate(self) -> int:
        """The front of the queue; a cached block there is evicted (its key goes)."""
        if not self._queue:
            raise BlockAccountingError("allocate() with no block in the queue: the caller must check num_free first")
        block, _ = self._queue.popitem(last=False)
        if block in self._cached:
            del self._cached[block]
            self.evictions += 1
            if self._on_evict is not None:
                self._on_evict(block)
        self._refs[block] = 1
        return block

    def acquire(self, block: int) -> None:
        """A prefix hit: a cached block leaves the queue."""
        if not self._refs[block]:
            if block not in self._cached:
                raise BlockAccountingError(f"acquire({block}): block {block} is free, not cached")
            del self._cached[block]
            del self._queue[block]
        self._refs[block] += 1

    def decref(self, block: int, keep: bool) -> None:
        """The last holder's release queues the block at the back, cached (with `keep`) or free."""
        count = self._refs[block]
        if not count:
            raise BlockAccountingError(f"decref({block}): block {block} has no holder (released more often than taken)")
        self._refs[block] = count - 1
        if count == 1:
            self._queue[block] = None
            if keep:
                self._cached[block] = None


class PagedKVCache(paged.PagedKVCache):
    """The reference cache with nano-vllm's free queue."""

    allocator = FreeQueueAllocator
