"""Allocation: which block each append takes, what stats() counts, and that every block comes back.

CONTRACT.md "Allocation policy" and "Operations" (stats). Under allocation=any the literal
tables below are compared up to a renaming of block ids (tests/oracle_ids.py).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import harness
from tests import skips
from tests.assertions import assert_equal
from tests.harness import assert_matches_model
from tests.programs import GEOMETRY, OP, both, new_cache, refused, run, run_program
from tests.strategies import make_chunk


def test_allocation_takes_the_lowest_free_block_after_frees_and_copies(impl: ModuleType) -> None:
    """Every block taken is the lowest-numbered free one at that moment, in position order."""
    cache, model = both(impl, 12, 2, 2, 2, 3)
    for s in (0, 1, 2):
        run((cache, model), "add_seq", s)
        run((cache, model), "append", s, 0, *make_chunk(2, 3, 3, s))  # 0: [0, 1], 1: [2, 3], 2: [4, 5]
    assert_equal('[block_table(s) for s in (0, 1, 2)]', [cache.block_table(s).tolist() for s in (0, 1, 2)], [[0, 1], [2, 3], [4, 5]], '[block_table(s) for s in (0, 1, 2)]')
    run((cache, model), "free", 1)  # 2 and 3 free again; 6.. never used
    run((cache, model), "fork", 0, 3)
    run((cache, model), "append", 3, 0, *make_chunk(2, 4, 3, 9))  # copy of block 1, then two new blocks
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6], 'block_table(3)')
    run((cache, model), "free", 0)  # block 1 returns; block 0 is still seq 3's
    run((cache, model), "append", 3, 1, *make_chunk(2, 7, 3, 10))  # layer 1 writes blocks 0, 2, 3, 6 (no sharing) then index 4 → 1
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6], 'block_table(3)')
    run((cache, model), "append", 3, 1, *make_chunk(2, 2, 3, 11))
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6, 1], 'block_table(3)')
    assert_matches_model(cache, model)


def test_stats_are_plain_ints_that_add_up(impl: ModuleType) -> None:
    cache, model = both(impl, 5, 2, 1, 2, 3)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(2, 3, 3, 1))
    stats = cache.stats()
    assert_equal("sorted(stats())", sorted(stats), sorted(model.stats()), "stats()")
    assert_equal("stats() types", {k: type(v).__name__ for k, v in stats.items()}, {k: "int" for k in model.stats()}, "stats()")
    assert_equal("stats()", stats, model.stats(), "stats()")
    for what, got, want in (
        ("num_free_blocks()", cache.num_free_blocks(), model.num_free_blocks()),
        ("seq_len(0)", cache.seq_len(0), model.seq_len(0)),
    ):
        assert_equal(f"type({what})", type(got).__name__, "int", what)
        assert_equal(what, got, want, what)


def test_a_pool_of_one_block(impl: ModuleType) -> None:
    cache, model = both(impl, 1, 3, 1, 1, 1)
    one = np.ones((1, 1, 1))
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    refused((cache, model), impl.OutOfBlocks, "append", 0, 0, np.ones((1, 2, 1)), np.ones((1, 2, 1)))  # positions 2 and 3: a second block
    assert_matches_model(cache, model, when=", after the refused append")  # the model, unchanged by its error
    run((cache, model), "fork", 0, 1)
    for writer in (1, 0):
        refused((cache, model), impl.OutOfBlocks, "append", writer, 0, one, one)  # the shared block would need a copy
    assert_matches_model(cache, model, when=", after the refused appends")
    run((cache, model), "free", 0)
    run((cache, model), "append", 1, 0, one * 5, one * 6)  # the child alone holds block 0: written in place
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0], 'block_table(1)')
    assert_matches_model(cache, model)
    run((cache, model), "free", 1)
    assert_matches_model(cache, model)


@given(geometry=GEOMETRY, num_blocks=st.integers(1, 16), ops=st.lists(OP, max_size=40), order=st.randoms(use_true_random=False))
def test_freeing_every_sequence_returns_every_block(
    geometry: tuple[int, int, int, int], num_blocks: int, ops: list[tuple[Any, ...]], order: Any
) -> None:
    """After a random program, used is what the model's live tables hold; freeing every sequence, in any
    order, returns every block, and a fresh sequence can take them all, lowest id first."""
    cache, model = new_cache(num_blocks, geometry)
    live = run_program(cache, model, ops, geometry)
    assert_matches_model(cache, model)
    order.shuffle(live)
    for s in live:
        run((cache, model), "free", s)
    assert_matches_model(cache, model)
    bs, n_layers, heads, dims = geometry
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(heads, num_blocks * bs, dims, 1, "float32", False))
    assert_matches_model(cache, model)
    cache.close()


@pytest.mark.python_surface  # paged's own allocator
def test_the_allocator_names_its_callers_bug() -> None:
    """paged's BlockAllocator refuses a release without a holder, a reference to a free block
    and an allocation from an empty pool with BlockAccountingError (an AssertionError, never
    OutOfBlocks), and its counts stay as they were."""
    if harness.impl_name() != "paged":
        pytest.skip(skips.OWN_ALLOCATOR)
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
