"""Tests written to kill mutants that mutmut found surviving the rest of the suite.

Each test names the mutants it was written for (see mutants/README.md for every survivor,
killed or explained). Like the whole suite, the first two reach the cache only through the
public calls of harness.impl(), so they gate a port exactly as they gate `paged`. The last
one checks `paged`'s own allocator, which is no part of the contract, and is skipped for
any other implementation.
"""

from __future__ import annotations

import gc
import sys
from types import ModuleType
from typing import Any

import pytest

import harness

# Finalisers, the garbage collector and the allocator: the Python surface (a driver has none of them).
pytestmark = pytest.mark.python_surface

BAD_SIZES: list[tuple[tuple[Any, ...], type[BaseException]]] = [
    ((0, 2, 1, 1, 1), ValueError),
    ((4, 2, 1, 1, 0), ValueError),
    ((4, 2.0, 1, 1, 1), TypeError),
    ((4, 2, 1, True, 1), TypeError),
]


@pytest.mark.parametrize("sizes, error", BAD_SIZES)
def test_a_constructor_that_raises_leaves_nothing_failing_behind(
    impl: ModuleType, sizes: tuple[Any, ...], error: type[BaseException]
) -> None:
    """A constructor that raises leaves no half-built object whose clean-up fails later.

    The half-built object is finalised when it is collected; an exception there (say a
    finaliser that calls a close() which releases a pool that was never made) is swallowed
    by Python and only reported to sys.unraisablehook, so this test listens there.
    Written for the mutants of `PagedKVCache.__init__` that started with `_closed` false,
    when `paged` had a `__del__`; it has none now, and the test stays for ports that do.
    """
    reported: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        with pytest.raises(error):
            impl.PagedKVCache(*sizes)
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert not reported, f"clean-up of a failed constructor raised: {[str(r.exc_value) for r in reported]}"


def test_a_closed_and_collected_cache_reports_nothing(impl: ModuleType) -> None:
    """Closing, then dropping the last reference, runs no failing clean-up either."""
    reported: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        cache = impl.PagedKVCache(4, 2, 1, 1, 2)
        cache.add_seq(0)
        cache.close()
        del cache
        gc.collect()
        with impl.PagedKVCache(4, 2, 1, 1, 2) as cache2:
            cache2.add_seq(1)
        del cache2
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert not reported, f"clean-up raised: {[str(r.exc_value) for r in reported]}"


def test_the_allocator_names_its_callers_bug() -> None:
    """paged's BlockAllocator refuses a release without a holder, a reference to a free block
    and an allocation from an empty pool with BlockAccountingError (an AssertionError, never
    OutOfBlocks), and its counts stay as they were."""
    if harness.impl_name() != "paged":
        pytest.skip("paged's own allocator: no part of the contract")
    from paged.allocator import BlockAllocator
    from paged.errors import BlockAccountingError, OutOfBlocks

    assert issubclass(BlockAccountingError, AssertionError)
    assert not issubclass(BlockAccountingError, OutOfBlocks)
    alloc = BlockAllocator(2)
    first = alloc.allocate()
    with pytest.raises(BlockAccountingError, match="no holder"):
        alloc.decref(1, False)
    with pytest.raises(BlockAccountingError, match="is free"):
        alloc.incref(1)
    with pytest.raises(BlockAccountingError, match="is free, not cached"):
        alloc.acquire(1)
    with pytest.raises(BlockAccountingError, match="not shared"):
        alloc.unshare(first)  # one holder: copy on write never moves off a block nobody else holds
    assert (alloc.num_free, alloc.allocate(), alloc.num_free) == (1, 1, 0)
    with pytest.raises(BlockAccountingError, match="no free block"):
        alloc.allocate()
    alloc.incref(first)
    alloc.unshare(first)
    alloc.decref(first, False)
    with pytest.raises(BlockAccountingError, match="no holder"):
        alloc.decref(first, False)  # released twice
    assert (alloc.num_free, alloc.allocate()) == (1, first)
