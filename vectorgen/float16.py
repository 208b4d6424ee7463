"""Every float16 a cache must keep, bit for bit (CONTRACT.md, `append`): signalling and quiet NaNs with
payloads of both signs, the infinities, subnormals, -0.0. A port that quietens a signalling NaN on
write (0x7c01 -> 0x7e01, as a conversion through float32 does on some hardware), drops a payload or
flushes subnormals differs at its first gather. Also `any_bits`, the K and V the geometry vectors
append: bit patterns drawn from all 65,536, the specials among them.
"""

from __future__ import annotations

import numpy as np

from testkit.chunks import FLOAT16_SPECIALS, Array
from vectorgen.script import Script, Vector, scripted

VECTORS: list[Vector] = []


def any_bits(heads: int, tokens: int, dims: int, seed: int) -> tuple[Array, Array]:
    """k and v [heads, tokens, dims] float16 of seeded bit patterns, any of the 65,536 (NaNs of every payload
    included), a tenth of them FLOAT16_SPECIALS."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in "kv":
        bits = rng.integers(0, 2**16, size=(heads, tokens, dims), dtype=np.uint16)
        special = rng.random(bits.shape) < 0.1
        bits[special] = rng.choice(FLOAT16_SPECIALS, size=int(special.sum()))
        out.append(bits.view(np.float16))
    return out[0], out[1]


def every_special(heads: int, dims: int, shift: int) -> Array:
    """[heads, n, dims] float16 holding each FLOAT16_SPECIALS value once (rotated by `shift`), padded with 1.0."""
    per = heads * dims
    n = -(-len(FLOAT16_SPECIALS) // per)
    bits = np.full(n * per, 0x3C00, dtype=np.uint16)
    bits[: len(FLOAT16_SPECIALS)] = np.roll(FLOAT16_SPECIALS, shift)
    return bits.reshape(heads, n, dims).view(np.float16)


@scripted(
    VECTORS,
    "float16-bits-kept",
    "signalling and quiet NaNs with payloads of both signs (0x7c01, 0xfc01, 0x7d55, 0x7e01, 0xfe3f, ...), +-inf, "
    "subnormals (0x0001, 0x83ff), -0.0: stored and gathered bit for bit, through chunks across blocks, a fork and "
    "a copy on write (the copy keeps them too)",
    "float16-bits copy-on-write layers",
)
def float16_bits(s: Script) -> None:
    c = s.new(8, 4, 2, 2, 4)
    c.add_seq(0)
    k, v = every_special(2, 4, 0), every_special(2, 4, 7)
    tokens = k.shape[1]
    c.append(0, 0, k[:, :1], v[:, :1])  # one position, then the rest across the block boundary
    c.append(0, 0, k[:, 1:], v[:, 1:])
    c.append(0, 1, v, k)
    s.observe(c, [0])
    c.fork(0, 1)
    c.append(1, 0, *any_bits(2, 1, 4, 5))  # copy on write of the partial block: every layer's specials copied
    s.observe(c, [0, 1])
    c.append(0, 1, *any_bits(2, 4 - tokens % 4 + 1, 4, 6))
    s.observe(c, [0, 1])
