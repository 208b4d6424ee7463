"""CONTRACT.md's integer ranges of the sliding window: W past 2^16 and at 2^31 - 1 with data (what
the cache does, not only that it accepts W), W past 2^32 refused, and a windowed sequence past
2^16 positions and past a flat index of 2^32 (issue 38). Named `range-window-*`, they are replayed
with the other `range-*` vectors (tests/test_widths.py) and need the capability `sliding_window`.
Built, as ranges.py's, from `distinct` values with H = D = L = 1, so they stay cheap.
"""

from __future__ import annotations

from typing import Callable

from vectorgen.ranges import distinct
from vectorgen.script import Script, Vector, scripted

VECTORS: list[Vector] = []


def window_range(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A vector of the window's integer ranges: id `range-window-{vid}`, flagged integer-range and sliding-window."""
    return scripted(VECTORS, f"range-window-{vid}", comment, f"integer-range sliding-window {flags}".strip())


@window_range(
    "past-16-bits",
    "W = 65,536, 65,537, 65,538 and 2^31 - 1 with data: three positions keep every block (a W kept in 16 bits, "
    "65,538 as 2, releases two); a sequence past W - 1 = 65,537 positions (B = 1024) gathers exactly its last "
    "65,537 and releases block 0; with prefix caching, need = ceil((W - 1) / B) past 2^16 (a hit falls back to "
    "the run from block 0); W = 2^32 + 2 and 2^32 + 65,538 are invalid_argument (a W narrowed before its check "
    "would take them as 2)",
)
def window_past_16_bits(s: Script) -> None:
    for w in (2**32 + 2, 2**32 + 65_538, 2**48 + 3):
        s.attempt(lambda: s.new(4, 1, 1, 1, 1, sliding_window=w))
    for n, w in enumerate((65_536, 65_537, 65_538, 2**31 - 1)):
        c = s.new(4, 1, 1, 1, 1, sliding_window=w)
        c.add_seq(0)
        c.append(0, 0, *distinct(3, 200 + n))  # the contract's table: 0, 1, 2; gather: 3 positions
        s.observe(c, [0])
    c = s.new(67, 1024, 1, 1, 1, sliding_window=65_538)
    c.add_seq(0)
    k, v = distinct(66_562, 210)
    at = 0
    for end in (65_536, 65_537, 65_538, 66_560, 66_561, 66_562):  # block 0 goes once 1024 <= n - 65,537
        c.append(0, 0, k[:, at:end], v[:, at:end])
        at = end
        c.seq_len(0, 0)
        c.block_table(0)
        c.stats()
    c.gather(0, 0)  # positions 1,025 .. 66,561: the last 65,537
    for w in (65_538, 2**31 - 1):  # need = 65,537 and 2^31 - 2 blocks of one position: k_max < need, the run from block 0
        c = s.new(8, 1, 1, 1, 1, prefix_caching=True, sliding_window=w)
        c.add_seq(0, [1, 2, 3, 4])
        c.append(0, 0, *distinct(4, 220))
        c.add_seq(1, [1, 2, 3, 4, 5])
        s.observe(c, [0, 1])


@window_range(
    "start-past-16-bits",
    "N = 70, B = 1024, W = 2: one append of 65,600 positions keeps only its last block (used = 1: the window's start "
    "m - W + 1 = 65,599 puts entries 0 .. 63 behind it); a start kept in 16 bits (65,599 as 63) releases none and "
    "keeps 65 blocks; the sequence goes on, one block held",
    "allocation-order",
)
def window_start_past_16_bits(s: Script) -> None:
    # B = 1024 keeps the table short: with B = 1 (70,000 blocks) the oracle's release, which counts each block's
    # holders over every table, takes minutes for the same bug.
    c = s.new(70, 1024, 1, 1, 1, sliding_window=2)
    c.add_seq(0)
    k, v = distinct(66_600, 230)
    c.append(0, 0, k[:, :65_600], v[:, :65_600])
    s.observe(c, [0])
    for at, end in ((65_600, 65_601), (65_601, 66_600)):  # within block 64, then across into block 65
        c.append(0, 0, k[:, at:end], v[:, at:end])
        s.observe(c, [0])


@window_range(
    "flat-index-past-32-bits",
    "257 blocks of 2^24 positions (8 GiB a pool, untouched but for a few positions), W = 3: 256 sequences of one "
    "position hold blocks 0 .. 255, a windowed sequence's positions then live in block 256, from flat position 2^32; "
    "its window starts inside the block, and it is forked and freed",
    "copy-on-write",
)
def window_flat_index(s: Script) -> None:
    c = s.new(257, 2**24, 1, 1, 1, sliding_window=3)
    k, v = distinct(300, 240)
    for seq in range(256):
        c.add_seq(seq)
        c.append(seq, 0, k[:, seq : seq + 1], v[:, seq : seq + 1])
    c.add_seq(256)
    for at in (256, 259, 260):  # positions 0..2, 3, 4 of sequence 256
        end = {256: 259, 259: 260, 260: 262}[at]
        c.append(256, 0, k[:, at:end], v[:, at:end])
        s.observe(c, [256])
    c.fork(256, 257)
    s.attempt(c.append, 257, 0, k[:, 262:263], v[:, 262:263])  # block 256 shared: its copy needs a free block, none is
    c.free(0)
    c.append(257, 0, k[:, 263:264], v[:, 263:264])  # now the copy takes block 0
    s.observe(c, [256, 257])
    c.free(256)
    s.observe(c, [257])
