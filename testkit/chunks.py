"""Chunks of K and V that tests and vectors are built from: seeded, reproducible, numpy only.

One home for the suite's Hypothesis strategies (tests/strategies.py re-exports these) and the
vector generator (vectorgen), which runs from the base install (numpy, no hypothesis):
`paged-gate --vectors` and `ci/vectors/generate` need nothing the tests' extra brings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]

INPUT_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")

# Values whose float16 rounding is a trap: ties to even (1 + 2^-11), subnormals and underflow,
# the largest finite value and values that round down onto it, negative zero, integers above
# 2048; and values just above a tie by less than float32 can hold, which round up only if a
# float64 is rounded once (through float32 they become the tie and round to even, down).
TRICKY: NDArray[np.float64] = np.array(
    [
        1 + 2**-12, 1 + 2**-11, 1 + 3 * 2**-11, 2049.0, 4097.0, 65504.0, 65519.0, 2.0**-24, 2.0**-25,
        3 * 2.0**-26, 2.0**-14 - 2.0**-25, -0.0, 0.1, 1 / 3, 1e-8, 1024.75, 7.0,
        1 + 2**-11 + 2**-30, 2049 + 2**-20, 1024.5 + 2**-30, 2.0**-25 + 2.0**-50,  # double-rounding traps
    ],
    dtype=np.float64,
)
# float16 bit patterns a cache must keep as they are (CONTRACT.md: bit for bit, NaN payloads and -0.0
# included): signalling NaNs (quiet bit 9 clear) and quiet NaNs with payloads, of both signs; NumPy's own
# NaNs; the infinities; the smallest and largest subnormals of both signs; -0.0; the largest finite values.
# Only float16 input carries them: a NaN converted from another dtype may lose its payload on the way.
FLOAT16_SPECIALS: NDArray[np.uint16] = np.array(
    [
        0x7C01, 0xFC01, 0x7D55, 0xFD55, 0x7DFF, 0xFC3F,  # signalling NaNs
        0x7E01, 0xFE3F, 0x7E00, 0xFE00, 0x7FFF, 0xFFFF,  # quiet NaNs
        0x7C00, 0xFC00,  # +inf, -inf
        0x0001, 0x8001, 0x03FF, 0x83FF, 0x0200,  # subnormals
        0x8000, 0x0000, 0x7BFF, 0xFBFF, 0x0400,  # -0.0, +0.0, the largest finite, the smallest normal
    ],
    dtype=np.uint16,
)
TRICKY_INTS: Array = np.array([2049, 2051, 4097, -4097, 65503, 65504, -65504, 32767, -32768, 255, 127, -128, 0, 1])


def make_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, tricky: bool) -> Array:
    """One array of `dtype`, reproducible from the generator's state; every value fits float16's range, but
    for `tricky` float16, a quarter of whose values are FLOAT16_SPECIALS (NaN payloads, infinities, ...)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        vals: Array
        if tricky:
            vals = rng.choice(TRICKY, size=shape) * rng.choice([1.0, -1.0], size=shape)
        else:
            vals = rng.standard_normal(shape) * float(rng.choice([1e-3, 1.0, 300.0]))
        out = vals.astype(dt)
        if tricky and dt == np.float16:  # a quarter of the values: bit patterns only float16 input can carry
            special = rng.random(shape) < 0.25
            out.view(np.uint16)[special] = rng.choice(FLOAT16_SPECIALS, size=int(special.sum()))
        return out
    info = np.iinfo(dt)
    lo, hi = max(int(info.min), -65504), min(int(info.max), 65504)
    if tricky:
        pool = TRICKY_INTS[(TRICKY_INTS >= lo) & (TRICKY_INTS <= hi)]
        return rng.choice(pool, size=shape).astype(dt)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def make_chunk(heads: int, tokens: int, dims: int, seed: int, dtype: str = "float32", tricky: bool = False) -> tuple[Array, Array]:
    """k and v `[heads, tokens, dims]` of `dtype`, different from each other, built from the seed."""
    rng = np.random.default_rng(seed)
    shape = (heads, tokens, dims)
    return make_values(rng, shape, dtype, tricky), make_values(rng, shape, dtype, tricky)


def seed_token(t: int, dtype: str = "float32") -> tuple[Array, Array]:
    """The seed's worked-example token (section 3): K = [t + 0.5, -t], V = -K, as [H=1, T=1, D=2]."""
    k = np.array([[[t + 0.5, -t]]], dtype=dtype)
    return k, -k
