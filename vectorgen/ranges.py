"""CONTRACT.md's integer ranges, past the boundaries of 8, 16 and 32-bit types: lengths, block ids,
flat indices into the pool, sequence ids and reference counts, where a port's narrow integer wraps.
tests/test_widths.py replays these (`range-*`); they are large, so built from `distinct` values.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from testkit.chunks import Array
from vectorgen.script import Script, Vector, collect

VECTORS: list[Vector] = []
vector = collect(VECTORS)


def distinct(tokens: int, seed: int) -> tuple[Array, Array]:
    """[1, tokens, 1] values whose bits differ between positions 2^8, 2^15 and 2^16 apart: finite, since these
    vectors check widths (NaN payloads, infinities and subnormals are float16.py's and the geometry vectors')."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7BFF, size=tokens, dtype=np.uint16)  # positive finite float16 bit patterns
    k = bits.view(np.float16).reshape(1, tokens, 1)
    return k, (-k).astype(np.float16)


@vector
def wide_lengths() -> Script:
    s = Script("range-length-past-16-bits", "one layer grows to 65,537 positions (B = 1024), its length and table checked past 127, 255, 32767 and 65535", "integer-range")
    c = s.new(65, 1024, 1, 1, 1)
    c.add_seq(0)
    k, v = distinct(65_537, 150)
    at = 0
    for end in (127, 128, 255, 256, 32767, 32768, 65535, 65536, 65537):
        c.append(0, 0, k[:, at:end], v[:, at:end])
        at = end
        c.seq_len(0, 0)
        c.block_table(0)
    s.observe(c, [0])
    return s


@vector
def wide_block_ids() -> Script:
    s = Script(
        "range-block-ids-past-16-bits",
        "65,540 blocks of one position: one-position probes take blocks 0, 128, 256, 32768, 65536 and 65537, "
        "long sequences the ids between; each probe's table and values, and the pool's counts",
        "integer-range allocation-order",
    )
    c = s.new(65_540, 1, 1, 1, 1)
    k, v = distinct(65_538, 160)
    probes, at = [], 0
    for n, end in enumerate((0, 128, 256, 32768, 65536, 65537)):
        if end > at:  # a long sequence takes the blocks at .. end-1
            c.add_seq(1000 + n)
            c.append(1000 + n, 0, k[:, at:end], v[:, at:end])
        c.add_seq(n)
        c.append(n, 0, k[:, end : end + 1], v[:, end : end + 1])
        probes.append(n)
        at = end + 1
    s.observe(c, probes)
    return s


@vector
def flat_index_past_32_bits() -> Script:
    s = Script(
        "range-flat-index-past-32-bits",
        "257 blocks of 2^24 positions (H = D = L = 1: 8 GiB a pool, untouched but for 257 positions): block 128 starts at flat position 2^31, block 256 at 2^32",
        "integer-range",
    )
    c = s.new(257, 2**24, 1, 1, 1)
    k, v = distinct(257, 170)
    for seq in range(257):
        c.add_seq(seq)
        c.append(seq, 0, k[:, seq : seq + 1], v[:, seq : seq + 1])
    for seq in (0, 1, 127, 128, 129, 255, 256):
        c.block_table(seq)
        c.gather(seq, 0)
    c.stats()
    return s


@vector
def wide_sequence_ids() -> Script:
    s = Script(
        "range-sequence-ids-64-bits",
        "ids that agree in their low 8, 16 or 32 bits, or differ only in sign, are different sequences; the extremes of int64",
        "integer-range",
    )
    ids = [1, 257, 65537, 2**32 + 1, -(2**32) + 1, 2**31, -(2**31), 2**32 - 1, -1, 2**63 - 1, -(2**63), 0, 128, -128, 32768, -32768]
    c = s.new(len(ids) + 2, 2, 1, 1, 1)
    k, v = distinct(len(ids), 180)
    for i, seq in enumerate(ids):
        c.add_seq(seq)
        c.append(seq, 0, k[:, i : i + 1], v[:, i : i + 1])
    s.observe(c, ids)
    for seq in ids[::2]:
        c.free(seq)
    s.observe(c, ids[1::2])
    c.fork(2**63 - 1, -(2**63) + 5)
    s.observe(c, [-(2**63) + 5])
    return s


@vector
def wide_reference_counts() -> Script:
    s = Script(
        "range-reference-count-past-16-bits",
        "one block held by 65,538 sequences (a parent and 65,537 forks): a write copies it, and it stays used as holders let go",
        "integer-range copy-on-write",
    )
    c = s.new(3, 2, 1, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *distinct(1, 190))
    held_by_65538(s, c, lambda: c.append(1, 0, *distinct(1, 191)))  # a write into the shared block: a copy
    return s


def held_by_65538(s: Script, c: Any, write: Callable[[], None], frees: int = 299) -> None:
    """Sequence 0's blocks held by 65,538 sequences (it and 65,537 forks, stats past each 8 and 16-bit boundary),
    `write` into them by fork 1 (copies: the others keep theirs), then `frees` holders letting go one by one (a count
    wrapped to 2 shows at the second: the oracle's free scans every table, so a few keep the vector cheap to write)."""
    checkpoints = {1, 2, 3, 127, 128, 129, 255, 256, 257, 32767, 32768, 32769, 65535, 65536, 65537}
    for child in range(1, 65_538):
        c.fork(0, child)
        if child in checkpoints:
            c.stats()
    write()
    s.observe(c, [0, 1, 2])
    for child in range(1, frees + 1):  # a count kept in 8 or 16 bits wrapped to 65,538 mod 2^8 = mod 2^16 = 2: it shows here
        c.free(child)
        c.stats()
    s.observe(c, [0])
    c.free(0)
    c.stats()
