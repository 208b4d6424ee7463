"""The error type the contract adds, and the one that reports a bug in paged itself."""


class OutOfBlocks(RuntimeError):
    """An append needs more blocks (new ones plus copy-on-write copies) than it can take: free, plus cached.

    Raised before anything observable changes, so a scheduler can preempt and retry.
    """


class BlockAccountingError(AssertionError):
    """A caller broke the allocator's rules: a bug in that caller, never a condition to handle.

    `BlockAllocator` raises it for a release of a block with no holder (a double release),
    a reference taken on a free block, a hit on a free block, a copy on write of a block
    that is not shared, and an allocation from an empty pool (the caller checks `num_free`
    first; `PagedKVCache.append` raises `OutOfBlocks` before it allocates). `PrefixIndex.drop`
    raises a plain AssertionError if pruning left a dead node in its tree.
    A correct `PagedKVCache` never raises it, so it is no part of the contract and a port
    need not have it. It subclasses AssertionError, like a failed `assert`, so that an
    `except RuntimeError` written for OutOfBlocks never swallows it; unlike an `assert`,
    `python -O` does not remove the check.
    """
