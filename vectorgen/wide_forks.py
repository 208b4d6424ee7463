"""Forks of 64-bit sequence ids (CONTRACT.md: every signed 64-bit integer is an id), followed through:
after a fork of an id of 2^32 or more (to 2^63 - 1, and from it to -2^63), the parent is freed, the
child and new sequences write, and both are gathered as far as the contract allows (a freed id is
KeyError, not the sequence whose id agrees in its low 32 bits). A port that takes no references on
such a fork gives the child's blocks back with the parent, and differs at the next stats().
tests/test_widths.py replays it with the other `range-*` vectors.
"""

from __future__ import annotations

from typing import Any

from vectorgen.float16 import any_bits
from vectorgen.script import Script, Vector, scripted

VECTORS: list[Vector] = []

PARENT, CHILD, LOW, OTHER, LAST = 2**32 + 3, 2**63 - 1, 3, 2**32 + 4, -(2**63)


@scripted(
    VECTORS,
    "range-fork-of-wide-ids-then-free",
    "fork(2^32 + 3, 2^63 - 1), then the parent freed: its blocks stay held by the child (stats, tables); a new "
    "sequence takes other blocks, the child writes in place, gathers of the freed id are KeyError while id 3 (the "
    "same low 32 bits) lives on; the id added again forks from the child and copies on write; a fork to -2^63, frees",
    "integer-range copy-on-write layers allocation-order",
)
def wide_forks(s: Script) -> None:
    fork_session(s, s.new(8, 2, 2, 1, 2))


def fork_session(s: Script, c: Any) -> None:
    """The session on cache c (two layers or more, B = 2, D = 2, a pool of 8 blocks or more)."""
    c.add_seq(PARENT)
    for layer in (0, 1):
        c.append(PARENT, layer, *any_bits(1, 3, 2, 10 + layer))  # blocks 0, 1
    c.add_seq(LOW)
    c.append(LOW, 0, *any_bits(1, 1, 2, 12))  # block 2
    c.fork(PARENT, CHILD)
    s.observe(c, [PARENT, CHILD, LOW])
    c.free(PARENT)  # blocks 0 and 1 stay used: the child holds them
    s.observe(c, [CHILD, LOW])
    s.attempt(c.gather, PARENT, 0)
    s.attempt(c.seq_len, PARENT, 1)
    c.add_seq(OTHER)
    c.append(OTHER, 0, *any_bits(1, 4, 2, 13))  # blocks 3 and 4, not the child's
    c.append(CHILD, 0, *any_bits(1, 1, 2, 14))  # position 3, in block 1 it holds alone: in place
    s.observe(c, [CHILD, OTHER, LOW])
    c.add_seq(PARENT)  # the freed id is a new, empty sequence
    s.observe(c, [PARENT])
    c.free(PARENT)
    c.fork(CHILD, PARENT)
    c.append(PARENT, 1, *any_bits(1, 1, 2, 15))  # position 3 of layer 1: block 1 is shared, copied
    s.observe(c, [CHILD, PARENT])
    c.fork(PARENT, LAST)
    c.free(CHILD)
    c.append(LAST, 0, *any_bits(1, 2, 2, 16))  # a copy of the shared block, then a new one
    s.observe(c, [PARENT, LAST])
    c.free(PARENT)
    s.attempt(c.gather, PARENT, 0)
    s.observe(c, [LAST, LOW, OTHER])
    for seq in (LAST, LOW, OTHER):
        c.free(seq)
    c.stats()
