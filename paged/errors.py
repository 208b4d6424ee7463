"""The one error type the contract adds: the pool cannot supply an append."""


class OutOfBlocks(RuntimeError):
    """An append needs more blocks (new ones plus copy-on-write copies) than are free.

    Raised before anything observable changes, so a scheduler can preempt and retry.
    """
