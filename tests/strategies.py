"""The suite's one home for what tests are built from, in the manner of array-api-tests'
hypothesis_helpers: geometries, chunks of K and V (float16 traps included), and the
model-side arithmetic that sizes an append. Tested themselves in test_strategies.py.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

import numpy as np
from hypothesis import strategies as st

from oracle import ModelKVCache

# -- chunks ---------------------------------------------------------------------------------------

INPUT_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")

# Values whose float16 rounding is a trap: ties to even (1 + 2^-11), subnormals and underflow,
# the largest finite value and values that round down onto it, negative zero, integers above
# 2048; and values just above a tie by less than float32 can hold, which round up only if a
# float64 is rounded once (through float32 they become the tie and round to even, down).
TRICKY = np.array(
    [
        1 + 2**-12, 1 + 2**-11, 1 + 3 * 2**-11, 2049.0, 4097.0, 65504.0, 65519.0, 2.0**-24, 2.0**-25,
        3 * 2.0**-26, 2.0**-14 - 2.0**-25, -0.0, 0.1, 1 / 3, 1e-8, 1024.75, 7.0,
        1 + 2**-11 + 2**-30, 2049 + 2**-20, 1024.5 + 2**-30, 2.0**-25 + 2.0**-50,  # double-rounding traps
    ],
    dtype=np.float64,
)
TRICKY_INTS = np.array([2049, 2051, 4097, -4097, 65503, 65504, -65504, 32767, -32768, 255, 127, -128, 0, 1])


def make_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, tricky: bool) -> np.ndarray:
    """One array of `dtype`, reproducible from the generator's state; every value fits float16's range."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if tricky:
            vals = rng.choice(TRICKY, size=shape) * rng.choice([1.0, -1.0], size=shape)
        else:
            vals = rng.standard_normal(shape) * float(rng.choice([1e-3, 1.0, 300.0]))
        return vals.astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(int(info.min), -65504), min(int(info.max), 65504)
    if tricky:
        pool = TRICKY_INTS[(TRICKY_INTS >= lo) & (TRICKY_INTS <= hi)]
        return rng.choice(pool, size=shape).astype(dt)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def make_chunk(
    heads: int, tokens: int, dims: int, seed: int, dtype: str = "float32", tricky: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """k and v `[heads, tokens, dims]` of `dtype`, different from each other, built from the seed."""
    rng = np.random.default_rng(seed)
    shape = (heads, tokens, dims)
    return make_values(rng, shape, dtype, tricky), make_values(rng, shape, dtype, tricky)


def seed_token(t: int, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    """The seed's worked-example token (section 3): K = [t + 0.5, -t], V = -K, as [H=1, T=1, D=2]."""
    k = np.array([[[t + 0.5, -t]]], dtype=dtype)
    return k, -k


# -- geometry -----------------------------------------------------------------------------------------


class Geometry(NamedTuple):
    """PagedKVCache's five sizes, in its argument order."""

    num_blocks: int
    block_size: int
    n_layers: int
    n_kv_heads: int
    d_head: int


def geometries(num_blocks: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[Geometry]:
    """Small geometries: pools from 1 block (the edge) to 64, blocks of 1 to 4 positions (1 often),
    1 to 3 layers, 1 or 2 heads, 1 to 3 dims. `num_blocks` replaces the pool-size strategy."""
    pools = st.one_of(st.integers(1, 3), st.integers(4, 16), st.integers(16, 64))
    return st.builds(
        Geometry,
        num_blocks=num_blocks if num_blocks is not None else pools,
        block_size=st.one_of(st.just(1), st.integers(1, 5)),
        n_layers=st.integers(1, 3),
        n_kv_heads=st.integers(1, 2),
        d_head=st.integers(1, 3),
    )


# -- sizing an append -----------------------------------------------------------------------------------


def blocks_needed(table: list[int], shared: Callable[[int], bool], start: int, tokens: int, block_size: int) -> int:
    """Blocks an append of `tokens` positions from `start` takes: a copy of each shared block it
    touches, plus a new block for each index past the end of the table (CONTRACT.md's rule)."""
    first, last = start // block_size, (start + tokens - 1) // block_size
    copies = sum(1 for i in range(first, min(last + 1, len(table))) if shared(table[i]))
    return copies + max(0, last + 1 - len(table))


def tokens_needing(needed: Callable[[int], int], blocks: int, limit: int, longest: bool) -> int | None:
    """The fewest (or most) tokens t <= limit with needed(t) == blocks; None if there is none.

    needed(t) grows with t by at most one block per block touched, so the scan stops once past.
    """
    found = None
    for t in range(1, limit + 1):
        n = needed(t)
        if n == blocks:
            found = t
            if not longest:
                return t
        elif n > blocks:
            break
    return found


def held_elsewhere(tables: Iterable[list[int]]) -> Callable[[int], bool]:
    """`shared` for blocks_needed from public calls only: a block another live table holds."""
    others = {b for table in tables for b in table}
    return others.__contains__


def model_blocks_needed(model: ModelKVCache, seq: int, layer: int, tokens: int) -> int:
    """blocks_needed for a sequence of the oracle's model: shared means more than one holder."""
    return blocks_needed(model.tables[seq], lambda b: model.holders(b) > 1, model.seq_len(seq, layer), tokens, model.block_size)
