"""CONTRACT.md's errors: a vector per row of the error table (the kind, and nothing observable
changes), the sizes below one, calls after close, which error wins when a call breaks several rules,
and a pool too large for memory. The wire's own errors are `protocol`'s.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from vectorgen.script import Script, Vector, chunk, collect

VECTORS: list[Vector] = []
vector = collect(VECTORS)

OK = np.zeros((2, 1, 3), dtype=np.float16)  # a valid chunk of the rows' cache (H = 2, D = 3)


def live_and_freed(s: Script) -> Any:
    """The error rows' cache: N=6, B=2, L=2, H=2, D=3; 0 (three positions) and its fork 1 live, 3 freed."""
    c = s.new(6, 2, 2, 2, 3)
    for seq in (0, 3):
        c.add_seq(seq)
    c.append(0, 0, *chunk(2, 3, 3, 110))
    c.fork(0, 1)
    c.free(3)
    return c


# One row of CONTRACT.md's error table each: the vector's id (after `error-`), what the call does, the call.
ERROR_ROWS: list[tuple[str, str, Callable[[Any], Any]]] = [
    ("unknown-seq-append", "append to an id never added", lambda c: c.append(99, 0, OK, OK)),
    ("freed-seq-append", "append to a freed id", lambda c: c.append(3, 0, OK, OK)),
    ("unknown-seq-gather", "gather of an id never added", lambda c: c.gather(99, 0)),
    ("freed-seq-seq-len", "seq_len of a freed id", lambda c: c.seq_len(3, 0)),
    ("unknown-seq-block-table", "block_table of an id never added", lambda c: c.block_table(99)),
    ("unknown-seq-free", "free of an id never added", lambda c: c.free(99)),
    ("freed-seq-free", "free of a freed id (a double free)", lambda c: c.free(3)),
    ("unknown-parent-fork", "fork from a parent never added", lambda c: c.fork(99, 5)),
    ("freed-parent-fork", "fork from a freed parent", lambda c: c.fork(3, 5)),
    ("live-id-add-seq", "add_seq of a live id", lambda c: c.add_seq(0)),
    ("live-child-fork", "fork onto a live child", lambda c: c.fork(0, 1)),
    ("fork-onto-itself", "fork of a sequence onto itself", lambda c: c.fork(0, 0)),
    ("layer-l-append", "append to layer L", lambda c: c.append(0, 2, OK, OK)),
    ("layer-minus-1-append", "append to layer -1", lambda c: c.append(0, -1, OK, OK)),
    ("layer-huge-append", "append to layer 2^40", lambda c: c.append(0, 2**40, OK, OK)),
    ("layer-l-gather", "gather of layer L", lambda c: c.gather(0, 2)),
    ("layer-minus-1-gather", "gather of layer -1", lambda c: c.gather(0, -1)),
    ("layer-l-seq-len", "seq_len of layer L", lambda c: c.seq_len(0, 2)),
    ("layer-minus-1-seq-len", "seq_len of layer -1", lambda c: c.seq_len(0, -1)),
    ("k-2d", "k is 2-D", lambda c: c.append(0, 0, OK[0], OK)),
    ("v-2d", "v is 2-D", lambda c: c.append(0, 0, OK, OK[:, :, 0])),
    ("k-and-v-2d", "k and v are 2-D", lambda c: c.append(0, 0, OK[0], OK[0])),
    ("k-4d", "k and v are 4-D", lambda c: c.append(0, 0, OK[None], OK[None])),
    ("k-0d", "k and v are 0-D", lambda c: c.append(0, 0, np.float16(1), np.float16(2))),
    ("shapes-differ", "k.shape != v.shape", lambda c: c.append(0, 0, OK, np.zeros((2, 2, 3), np.float16))),
    ("wrong-heads", "H is not the cache's", lambda c: c.append(0, 0, np.zeros((1, 1, 3), np.float16), np.zeros((1, 1, 3), np.float16))),
    ("wrong-d-head", "D is not the cache's", lambda c: c.append(0, 0, np.zeros((2, 1, 4), np.float16), np.zeros((2, 1, 4), np.float16))),
    ("zero-tokens", "T = 0", lambda c: c.append(0, 0, np.zeros((2, 0, 3), np.float16), np.zeros((2, 0, 3), np.float16))),
]


def error_row(name: str, comment: str, call: Callable[[Any], Any]) -> Vector:
    """One row's vector: the call on live_and_freed's cache is refused, and every observable stays."""

    def make() -> Script:
        s = Script(f"error-{name}", f"{comment}: its error, and nothing observable changes", "error-table")
        c = live_and_freed(s)
        s.observe(c, [0, 1])
        s.attempt(call, c)
        s.observe(c, [0, 1])
        return s

    return make


VECTORS += [error_row(*row) for row in ERROR_ROWS]


def refused_sizes(s: Script, refused: Iterable[Sequence[int]]) -> Script:
    """Each constructor refused, then a valid one, observed: its handle shows that none was taken."""
    for sizes in refused:
        s.attempt(s.new, *sizes)
    s.observe(s.new(4, 2, 1, 1, 1), [])
    return s


@vector
def sizes_below_one() -> Script:
    s = Script("error-sizes-below-one", "a constructor size of 0 or -1, each of the five; no handle is taken", "error-table")
    below = [[bad if i == which else size for i, size in enumerate((4, 2, 1, 1, 1))] for which in range(5) for bad in (0, -1)]
    return refused_sizes(s, below)


@vector
def after_close() -> Script:
    s = Script("error-after-close", "every call after close() is refused; a second close does nothing", "error-table close")
    c = s.new(4, 2, 1, 2, 3)
    c.add_seq(0)
    c.append(0, 0, *chunk(2, 1, 3, 120))
    other = s.new(4, 2, 1, 2, 3)
    c.close()
    c.close()
    for call, args in (("add_seq", (5,)), ("fork", (0, 5)), ("append", (0, 0, OK, OK)), ("gather", (0, 0)), ("seq_len", (0, 0)),
                       ("block_table", (0,)), ("free", (0,)), ("stats", ()), ("num_free_blocks", ())):
        s.attempt(getattr(c, call), *args)
    other.add_seq(0)
    s.observe(other, [0])
    return s


@vector
def error_precedence() -> Script:
    s = Script(
        "error-precedence",
        "several faults in one call: closed before everything, then the sequence id (fork: the parent before the child), "
        "then layer and shapes, then capacity; the sizes before memory",
        "error-precedence error-table out-of-blocks",
    )
    c = live_and_freed(s)
    s.observe(c, [0, 1])
    z = np.zeros
    two_d, differ, wrong_h, empty = OK[0], z((2, 2, 3), np.float16), z((1, 1, 3), np.float16), z((2, 0, 3), np.float16)
    big, big_wrong_d = chunk(2, 12, 3, 200), (z((2, 12, 4), np.float16),) * 2  # 12 positions: more blocks than it can take
    args: tuple[Any, ...]
    for call, args in (
        # an id that is not live (never added: 99; freed: 3) wins over a bad layer, bad shapes, and capacity
        (c.append, (99, 2, OK, OK)), (c.append, (3, -1, OK, OK)), (c.append, (99, 0, two_d, OK)),
        (c.append, (3, 0, OK, differ)), (c.append, (99, 0, wrong_h, wrong_h)), (c.append, (99, 2**40, empty, empty)),
        (c.append, (99, 0, *big)), (c.gather, (99, 2)), (c.gather, (3, -1)), (c.seq_len, (99, -1)),
        # fork: an unknown parent wins over a live child, itself included
        (c.fork, (99, 1)), (c.fork, (3, 0)), (c.fork, (99, 99)),
        # a bad layer or shape wins over capacity; the same append alone runs out of blocks
        (c.append, (0, 2, *big)), (c.append, (0, 0, *big_wrong_d)), (c.append, (1, 0, big[0], big[1][:, :11])), (c.append, (0, 0, *big)),
    ):
        s.attempt(call, *args)
        s.observe(c, [0, 1])
    closed = live_and_freed(s)
    closed.close()
    for call, args in ((closed.append, (99, 2, two_d, OK)), (closed.fork, (99, 0)), (closed.fork, (0, 1)), (closed.gather, (99, -1)),
                       (closed.seq_len, (0, 5)), (closed.free, (99,)), (closed.block_table, (3,)), (closed.add_seq, (0,))):
        s.attempt(call, *args)
    for sizes in ((0, 2**61, 1, 1, 1), (2**31, 2**61, 1, 1, 1), (4, 2, 0, 2**40, 2**40)):  # a bad size wins over memory
        s.attempt(s.new, *sizes)
    s.observe(c, [0, 1])
    return s


@vector
def pool_too_large() -> Script:
    s = Script(
        "error-pool-too-large",
        "a pool whose K and V need 2^63 bytes or more (4 * N * B * L * H * D) is out of memory, past 2^64 too, and takes no handle; "
        "num_blocks past 2^31 - 1 is an invalid argument",
        "error-table integer-range",
    )
    return refused_sizes(s, [(2**31 - 1, 2**31 - 1, 1, 1, 1), (1, 2**61, 1, 1, 1), (2**31 - 1, 2**40, 2**40, 1, 1),
                             (2**31 - 1, 1, 1, 2**30, 2**30), (2**31, 1, 1, 1, 1), (2**63 - 1, 1, 1, 1, 1)])
