"""CONTRACT.md's integer ranges on hybrid caches of two and three groups (issue 52): the checks of ranges.py and
window_ranges.py for one group, again where a port's narrow integer may live only in its code for several groups
(a table per group, a layer-to-group map, each layer's window). Named `range-hybrid-*`, replayed with the other
`range-*` vectors (tests/test_widths.py); they need the capability `hybrid`. Built, as ranges.py's, from
`distinct` values with H = D = 1, so they stay as cheap as their one-group counterparts.
"""

from __future__ import annotations

from typing import Any

from vectorgen.ranges import distinct, held_by_65538
from vectorgen.script import Script, Vector
from vectorgen.wide_forks import fork_session

VECTORS: list[Vector] = []

# Two groups (full attention, a window) and three (a second window), every layer's group a different table.
GROUPS: dict[int, tuple[int | None, ...]] = {2: (None, 3), 3: (None, 3, 5)}


def every_layer(c: Any, seq: int, k: Any, v: Any, layers: int) -> None:
    """The same positions appended to every layer of `seq`: each group's table takes a block for them."""
    for layer in range(layers):
        c.append(seq, layer, k, v)


def block_ids(groups: int) -> Vector:
    windows = GROUPS[groups]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-block-ids-past-16-bits",
            f"layer_windows={windows}, 65,541 blocks of one position: long sequences in layer 0 take the ids between "
            f"probes, each of whose one position in each of its {groups} layers takes one id a group, the last from 65,535 on; "
            "a free gives the lowest back",
            "integer-range hybrid allocation-order",
        )
        c = s.new(65_541, 1, groups, 1, 1, layer_windows=windows)
        k, v = distinct(65_540, 160 + groups)
        probes, at = [], 0
        for n, end in enumerate((0, 32_767, 65_535)):
            if end > at:  # a long sequence, full attention: ids at .. end-1 (groups of them go to the probe before)
                c.add_seq(1000 + n)
                c.append(1000 + n, 0, k[:, at:end], v[:, at:end])
            c.add_seq(n)
            every_layer(c, n, k[:, end : end + 1], v[:, end : end + 1], groups)  # one id a group
            probes.append(n)
            at = end + groups
        s.observe(c, probes)
        c.free(probes[0])  # ids 0 .. groups-1 back: the lowest, before any past 65,535
        c.add_seq(99)
        every_layer(c, 99, k[:, 1:2], v[:, 1:2], groups)
        s.observe(c, [99, probes[-1]])
        return s

    make.__name__ = f"hybrid_{groups}_block_ids"
    return make


def sequence_ids(groups: int) -> Vector:
    windows = GROUPS[groups]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-sequence-ids-64-bits",
            f"layer_windows={windows}: ids that agree in their low 8, 16 or 32 bits, or differ only in sign, are different "
            "sequences, each with a block in every group; the extremes of int64; frees and a fork of them",
            "integer-range hybrid",
        )
        ids = [1, 257, 65537, 2**32 + 1, -(2**32) + 1, 2**31, -(2**31), 2**32 - 1, -1, 2**63 - 1, -(2**63), 0]
        c = s.new(groups * (len(ids) + 1), 2, groups, 1, 1, layer_windows=windows)
        k, v = distinct(len(ids), 180 + groups)
        for i, seq in enumerate(ids):
            c.add_seq(seq)
            every_layer(c, seq, k[:, i : i + 1], v[:, i : i + 1], groups)
        s.observe(c, ids)
        for seq in ids[::2]:
            c.free(seq)
        s.observe(c, ids[1::2])
        c.fork(2**63 - 1, -(2**63) + 5)
        s.attempt(c.seq_len, 1, 0)  # freed, while 2^32 + 1, of the same low 32 bits, lives
        s.observe(c, [-(2**63) + 5, 2**32 + 1])
        return s

    make.__name__ = f"hybrid_{groups}_sequence_ids"
    return make


def flat_index(groups: int) -> Vector:
    windows = GROUPS[groups]
    blocks = {2: 129, 3: 86}[groups]  # the last layer's last block starts past flat position 2^32 of [L, H, N, B, D]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-flat-index-past-32-bits",
            f"layer_windows={windows}, {blocks} blocks of 2^24 positions (8 GiB a pool, untouched but for a few positions): "
            f"the last layer's blocks start past flat position 2^31 and 2^32; each group's sequences take the ids in turn",
            "integer-range hybrid",
        )
        c = s.new(blocks, 2**24, groups, 1, 1, layer_windows=windows)
        k, v = distinct(blocks, 170 + groups)
        for seq in range(blocks // groups):
            c.add_seq(seq)
            every_layer(c, seq, k[:, seq : seq + 1], v[:, seq : seq + 1], groups)
        for seq in (0, 1, blocks // groups // 2, blocks // groups - 1):
            for layer in range(groups):
                c.block_table(seq, layer)
                c.gather(seq, layer)
        c.stats()
        return s

    make.__name__ = f"hybrid_{groups}_flat_index"
    return make


def windows_past_16_bits() -> Vector:
    def make() -> Script:
        s = Script(
            "range-hybrid-windows-past-16-bits",
            "layer_windows entries of 65,536, 65,537, 65,538 and 2^31 - 1 beside full attention and a window of 3, with data: "
            "three positions keep every block of the wide window's layer (an entry kept in 16 bits, 65,538 as 2, releases "
            "two); entries of 2^32 + 2 and 2^32 + 65,538 are invalid_argument",
            "integer-range hybrid",
        )
        for w in (2**32 + 2, 2**32 + 65_538):
            s.attempt(lambda: s.new(4, 1, 3, 1, 1, layer_windows=(None, 3, w)))
        for n, w in enumerate((65_536, 65_537, 65_538, 2**31 - 1)):
            c = s.new(12, 1, 3, 1, 1, layer_windows=(None, 3, w))
            c.add_seq(0)
            every_layer(c, 0, *distinct(4, 200 + n), 3)
            s.observe(c, [0])
        return s

    make.__name__ = "hybrid_windows_past_16_bits"
    return make


def lengths(groups: int) -> Vector:
    windows = {2: (None, 2), 3: (None, 3, 2)}[groups]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-length-past-16-bits",
            f"layer_windows={windows}, B = 1024: the last layer (a window of 2) grows to 65,537 positions, its length, its "
            "group's table and the pool's counts checked past 127, 255, 32767 and 65535 (its window's start past 65,535 "
            "too), while the other groups' layers hold a few positions and keep their blocks",
            "integer-range hybrid",
        )
        c = s.new(70, 1024, groups, 1, 1, layer_windows=windows)
        c.add_seq(0)
        k, v = distinct(65_537, 150 + groups)
        for layer in range(groups - 1):
            c.append(0, layer, k[:, :3], v[:, :3])
        at = 0
        for end in (127, 128, 255, 256, 32767, 32768, 65535, 65536, 65537):
            c.append(0, groups - 1, k[:, at:end], v[:, at:end])
            at = end
            c.seq_len(0, groups - 1)
            c.block_table(0, groups - 1)
            c.stats()
        s.observe(c, [0])
        return s

    make.__name__ = f"hybrid_{groups}_lengths"
    return make


def wide_forks(groups: int) -> Vector:
    windows = GROUPS[groups]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-fork-of-wide-ids-then-free",
            f"range-fork-of-wide-ids-then-free's session on layer_windows={windows}: forks of ids past 32 bits, the parent "
            "freed while the child holds every group's blocks, copies on write, a fork to -2^63, frees",
            "integer-range hybrid copy-on-write layers allocation-order",
        )
        fork_session(s, s.new(16, 2, groups, 1, 2, layer_windows=windows))
        return s

    make.__name__ = f"hybrid_{groups}_wide_forks"
    return make


def reference_counts(groups: int) -> Vector:
    windows = GROUPS[groups]

    def make() -> Script:
        s = Script(
            f"range-hybrid-{groups}-groups-reference-count-past-16-bits",
            f"range-reference-count-past-16-bits' session on layer_windows={windows}: one position in every layer, so one "
            f"block in each of the {groups} groups held by 65,538 sequences (a parent and 65,537 forks; a window keeps "
            "it, its one or two positions within); a write copies each, and they stay used as nine holders let go",
            "integer-range hybrid copy-on-write",
        )
        c = s.new(3 * groups, 2, groups, 1, 1, layer_windows=windows)
        c.add_seq(0)
        every_layer(c, 0, *distinct(1, 210 + groups), groups)

        def write() -> None:  # into each group's shared block: copies, the others keep them
            held = [c.block_table(0, layer) for layer in range(groups)]  # the oracle's: each group still holds its block
            assert all(len(table) == 1 and table[0] >= 0 for table in held), held
            every_layer(c, 1, *distinct(1, 220 + groups), groups)

        held_by_65538(s, c, write, frees=9)
        return s

    make.__name__ = f"hybrid_{groups}_reference_counts"
    return make


VECTORS += [block_ids(2), block_ids(3), sequence_ids(2), sequence_ids(3), flat_index(2), flat_index(3), windows_past_16_bits()]
VECTORS += [lengths(2), lengths(3), wide_forks(2), wide_forks(3), reference_counts(2), reference_counts(3)]
