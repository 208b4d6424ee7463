"""The suite's own building blocks (tests/strategies.py), checked: a wrong helper would make every
test that uses it check the wrong thing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks
from tests.strategies import (
    FLOAT16_SPECIALS,
    INPUT_DTYPES,
    TRICKY,
    blocks_needed,
    geometries,
    make_chunk,
    model_blocks_needed,
    seed_token,
    tokens_needing,
)

pytestmark = pytest.mark.oracle


@given(dtype=st.sampled_from(INPUT_DTYPES), tricky=st.booleans(), seed=st.integers(0, 2**16), tokens=st.integers(1, 9))
def test_make_chunk_is_seeded_shaped_and_in_float16_range(dtype: str, tricky: bool, seed: int, tokens: int) -> None:
    k, v = make_chunk(2, tokens, 3, seed, dtype, tricky)
    again = make_chunk(2, tokens, 3, seed, dtype, tricky)
    assert k.shape == v.shape == (2, tokens, 3) and k.dtype == v.dtype == np.dtype(dtype)
    bits = np.dtype(f"u{k.dtype.itemsize}") if k.dtype.kind == "f" else k.dtype  # NaN != NaN: compare bit patterns
    assert np.array_equal(k.view(bits), again[0].view(bits)) and np.array_equal(v.view(bits), again[1].view(bits)), "the same seed gives the same chunk"
    for x in (k, v):
        finite = np.abs(x.astype(np.float64)) <= 65519
        if tricky and dtype == "float16":  # the others are bit patterns a cache must keep: NaN payloads, infinities
            assert np.isin(x[~finite].view(np.uint16), FLOAT16_SPECIALS).all(), "every value but the specials is finite"
        else:
            assert finite.all(), "every value rounds to a finite float16"


def test_tricky_values_are_rounding_traps() -> None:
    as16 = TRICKY.astype(np.float16)
    through32 = TRICKY.astype(np.float32).astype(np.float16)
    assert np.any(as16.view(np.uint16) != through32.view(np.uint16)), "some values round differently through float32"
    assert 1 + 2**-11 in TRICKY and np.float16(1 + 2**-11) == 1.0, "a tie that rounds to even"
    assert np.any(np.signbit(TRICKY) & (TRICKY == 0)), "negative zero"


def test_seed_token_is_the_worked_example() -> None:
    k, v = seed_token(3)
    assert k.tolist() == [[[3.5, -3.0]]] and v.tolist() == [[[-3.5, 3.0]]]


def test_blocks_needed_by_hand() -> None:
    never = set[int]().__contains__
    assert blocks_needed([], never, 0, 1, 4) == 1
    assert blocks_needed([0], never, 0, 4, 4) == 0, "ends exactly on the block boundary: nothing more"
    assert blocks_needed([0], never, 3, 2, 4) == 1
    assert blocks_needed([0, 1], {1}.__contains__, 5, 8, 4) == 1 + 2, "a copy of block 1, then two new blocks"
    assert blocks_needed([0, 1], {0, 1}.__contains__, 8, 1, 4) == 1, "past the table: shared blocks are not touched"


def test_tokens_needing_finds_the_fewest_and_the_most() -> None:
    def needed(t: int) -> int:  # blocks of 4 positions from position 2 of a one-block table
        return blocks_needed([0], set[int]().__contains__, 2, t, 4)

    assert tokens_needing(needed, 1, 20, longest=False) == 3
    assert tokens_needing(needed, 1, 20, longest=True) == 6
    assert tokens_needing(needed, 0, 20, longest=True) == 2
    assert tokens_needing(needed, 9, 20, longest=False) is None


@given(geometry=geometries(), ops=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 9), st.booleans()), max_size=12))
def test_model_blocks_needed_is_what_the_model_takes(geometry: tuple[int, ...], ops: list[tuple[int, int, bool]]) -> None:
    """Across forks and appends: an append takes exactly model_blocks_needed blocks, and runs out exactly when that is more than are free."""
    model = ModelKVCache(*geometry)
    model.add_seq(0)
    live = [0]
    for layer, tokens, fork in ops:
        if fork:
            model.fork(live[-1], len(live))
            live.append(len(live))
        seq, li = live[-1], layer % model.n_layers
        needed, free = model_blocks_needed(model, seq, li, tokens), model.num_free_blocks()
        k, v = make_chunk(model.n_kv_heads, tokens, model.d_head, tokens)
        try:
            model.append(seq, li, k, v)
        except ModelOutOfBlocks:
            assert needed > free
        else:
            assert free - model.num_free_blocks() == needed


@given(geometry=geometries())
def test_geometries_are_valid_sizes(geometry: tuple[int, ...]) -> None:
    assert len(geometry) == 5 and all(isinstance(x, int) and x >= 1 for x in geometry)


def test_tricky_float16_chunks_carry_every_kind_of_special_value() -> None:
    """Signalling and quiet NaNs with payloads of both signs, the infinities, subnormals and -0.0 all reach the
    machines' tricky float16 chunks (a quarter of their values), and the list itself holds each kind."""
    bits = np.concatenate([make_chunk(2, 9, 3, seed, "float16", True)[0].view(np.uint16).ravel() for seed in range(200)])
    assert set(FLOAT16_SPECIALS.tolist()) <= set(bits.tolist()), "every special value is drawn"
    specials = set(FLOAT16_SPECIALS.tolist())
    nan = [b for b in specials if b & 0x7C00 == 0x7C00 and b & 0x3FF]
    assert {b >> 15 for b in nan if not b & 0x200} == {0, 1} and {b >> 15 for b in nan if b & 0x200} == {0, 1}, "sNaN and qNaN, both signs"
    assert {0x7C01, 0xFC01, 0x7E01, 0x7D55, 0xFE3F, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x8000} <= specials
