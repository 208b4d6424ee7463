"""The block allocator: reference counts and a free pool that hands out the lowest id.

One allocator serves the whole cache. `allocate` always returns the lowest-numbered free
block (a binary heap keeps that O(log N)), which pins the tables a port must reproduce.
"""

import heapq

from .errors import BlockAccountingError


class BlockAllocator:
    """Reference-counted ownership of block ids 0 .. num_blocks-1.

    Invariants (kept by these four methods, the only code that touches `_free` and `_refs`):

    - `_refs[b]` is the number of holders of block b, never below 0.
    - b is in `_free` exactly when `_refs[b] == 0`, at most once; `_free` is a heap, so
      `_free[0]` is the lowest free id. Hence `num_free + (blocks with a holder) == num_blocks`.

    A caller that would break them gets a `BlockAccountingError` naming its bug, and the
    counts stay as they were: `allocate` from an empty pool (check `num_free` first),
    `incref` of a free block (a reference to a block nobody holds), `decref` of a block with
    no holder (released more often than taken). `allocate` also refuses a free block that
    has holders, which only a broken allocator could have.
    """

    __slots__ = ("_free", "_refs")

    def __init__(self, num_blocks: int) -> None:
        self._free: list[int] = list(range(num_blocks))  # sorted, hence a valid heap
        self._refs: list[int] = [0] * num_blocks

    @property
    def num_free(self) -> int:
        return len(self._free)

    def allocate(self) -> int:
        """Take the lowest-numbered free block, with one holder. The caller checks `num_free` first."""
        if not self._free:
            raise BlockAccountingError("allocate() with no free block: the caller must check num_free first")
        block = heapq.heappop(self._free)
        if self._refs[block]:
            raise BlockAccountingError(f"free block {block} has {self._refs[block]} holders: the counts are corrupt")
        self._refs[block] = 1
        return block

    def shared(self, blocks: list[int], start: int) -> list[int]:
        """The indices, counting the first block as `start`, of the blocks with more than one holder."""
        refs = self._refs
        return [i for i, block in enumerate(blocks, start) if refs[block] > 1]

    def incref(self, block: int) -> None:
        """One more holder of a block that already has one (a fork)."""
        if not self._refs[block]:
            raise BlockAccountingError(f"incref({block}): block {block} is free; take blocks with allocate()")
        self._refs[block] += 1

    def decref(self, block: int) -> None:
        """Drop one holder; the last holder's release returns the block to the pool."""
        count = self._refs[block]
        if not count:
            raise BlockAccountingError(f"decref({block}): block {block} has no holder (released more often than taken)")
        self._refs[block] = count - 1
        if count == 1:
            heapq.heappush(self._free, block)
