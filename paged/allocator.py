"""The block allocator: reference counts and a free pool that hands out the lowest id.

One allocator serves the whole cache. A block is free exactly when its reference
count is zero; `allocate` always returns the lowest-numbered free block (a binary
heap keeps that O(log N)), which pins the tables a port must reproduce.
"""

import heapq


class BlockAllocator:
    """Reference-counted ownership of block ids 0 .. num_blocks-1."""

    __slots__ = ("_free", "_refs")

    def __init__(self, num_blocks: int) -> None:
        self._free: list[int] = list(range(num_blocks))  # sorted, hence a valid heap
        self._refs: list[int] = [0] * num_blocks

    @property
    def num_free(self) -> int:
        return len(self._free)

    def allocate(self) -> int:
        """Take the lowest-numbered free block, with one reference. The caller checks capacity."""
        block = heapq.heappop(self._free)
        self._refs[block] = 1
        return block

    def is_shared(self, block: int) -> bool:
        return self._refs[block] > 1

    def incref(self, block: int) -> None:
        self._refs[block] += 1

    def decref(self, block: int) -> None:
        """Drop one reference; the last holder's release returns the block to the pool."""
        self._refs[block] -= 1
        if self._refs[block] == 0:
            heapq.heappush(self._free, block)
