"""The worked example (docs/PROTOCOL.md, "A worked transcript"), call by call, and a vector per
pitfall of the chapter this project was written from, named for the planted mutant it kills
(mutants/README.md, s01..s13): the bugs every port is likeliest to have.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from testkit.chunks import seed_token
from vectorgen.script import Script, Vector, chunk, collect, scripted

VECTORS: list[Vector] = []
vector = collect(VECTORS)


@vector
def seed_example() -> Script:
    s = Script("seed-example", "B = 2, one layer, one head, D = 2, a pool of 4; five tokens one at a time, then a fork whose child writes", "seed-example copy-on-write")
    c = s.new(4, 2, 1, 1, 2)
    c.add_seq(0)
    for t in range(5):
        c.append(0, 0, *seed_token(t, "float16"))
        s.observe(c, [0])
    c.fork(0, 1)
    s.observe(c, [0, 1])
    c.append(1, 0, *seed_token(5, "float16"))
    s.observe(c, [0, 1])
    return s


def pitfall(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A pitfall's vector: flagged seed-pitfall, with `flags` besides."""
    return scripted(VECTORS, vid, comment, f"seed-pitfall {flags}".strip())


@pitfall("s01-block-on-boundary", "a write that ends exactly on a block boundary allocates nothing more", "allocation-order")
def s01(s: Script) -> None:
    c = s.new(6, 4, 1, 2, 3)
    c.add_seq(0)
    c.append(0, 0, *chunk(2, 4, 3, 1))
    s.observe(c, [0])
    c.append(0, 0, *chunk(2, 3, 3, 2))
    c.append(0, 0, *chunk(2, 1, 3, 3))
    s.observe(c, [0])


@pitfall("s02-gather-whole-blocks", "the partial last block gathers only the positions written")
def s02(s: Script) -> None:
    c = s.new(4, 4, 1, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 6, 2, 4))
    c.add_seq(1)
    c.append(1, 0, *chunk(1, 3, 2, 5))
    s.observe(c, [0, 1])


@pitfall("s03-block-viewed-as-bhd", "gather returns [H, T, D]: value h*100 + t*10 + d at [h, t, d]")
def s03(s: Script) -> None:
    heads, dims, tokens = 3, 4, 9
    h, t, d = np.meshgrid(np.arange(heads), np.arange(tokens), np.arange(dims), indexing="ij")
    k = (h * 100 + t * 10 + d).astype(np.float16)
    c = s.new(8, 2, 1, heads, dims)
    c.add_seq(7)
    for lo, hi in ((0, 1), (1, 4), (4, 9)):
        c.append(7, 0, k[:, lo:hi], (-k[:, lo:hi] - 1).astype(np.float16))
    s.observe(c, [7])


@pitfall("s04-k-into-v-slab", "K and V are stored apart: V differs from K in every value")
def s04(s: Script) -> None:
    c = s.new(8, 3, 2, 2, 2)
    c.add_seq(0)
    for layer in (0, 1):
        c.append(0, layer, *chunk(2, 5, 2, 10 + layer))
    s.observe(c, [0])


@pitfall("s05-chunk-ignores-start-slot", "chunks that start mid-block land at their slots, across block boundaries")
def s05(s: Script) -> None:
    c = s.new(16, 4, 1, 2, 3)
    for seq in (10, 20):
        c.add_seq(seq)
    for step, n in enumerate((3, 2, 7, 1, 5, 6)):
        c.append((10, 20)[step % 2], 0, *chunk(2, n, 3, 20 + step))
        s.observe(c, [10, 20])


@pitfall("s06-fork-without-references", "a fork takes a reference on every block: the parent's free returns none the child holds", "copy-on-write")
def s06(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 5, 2, 30))
    c.fork(0, 1)
    s.observe(c, [0, 1])
    c.free(0)
    s.observe(c, [1])
    c.add_seq(2)
    c.append(2, 0, *chunk(1, 4, 2, 31))
    s.observe(c, [1, 2])


@pitfall("s07-shared-block-in-place", "the child's write into a shared block copies it first; the parent sees nothing", "copy-on-write")
def s07(s: Script) -> None:
    c = s.new(8, 2, 2, 1, 2)
    c.add_seq(0)
    for layer in (0, 1):
        c.append(0, layer, *chunk(1, 5, 2, 40 + layer))
    c.fork(0, 1)
    c.append(1, 1, *chunk(1, 1, 2, 42))
    s.observe(c, [0, 1])
    c.append(1, 0, *chunk(1, 1, 2, 43))
    c.append(0, 0, *chunk(1, 1, 2, 44))
    s.observe(c, [0, 1])


@pitfall("s08-free-without-release", "free returns the sequence's blocks to the pool")
def s08(s: Script) -> None:
    c = s.new(4, 2, 1, 1, 1)
    for round_ in range(3):
        c.add_seq(round_)
        c.append(round_, 0, *chunk(1, 7, 1, 50 + round_))
        s.observe(c, [round_])
        c.free(round_)
        s.observe(c, [])


@pitfall("s09-release-first-block-only", "free releases every block of the table, not only the first")
def s09(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 6, 1, 60))
    c.free(0)
    s.observe(c, [])
    c.add_seq(1)
    c.append(1, 0, *chunk(1, 12, 1, 61))
    s.observe(c, [1])


@pitfall("s10-length-before-allocating", "an append that runs out of blocks leaves the length as it was", "out-of-blocks")
def s10(s: Script) -> None:
    c = s.new(2, 2, 1, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 2, 70))
    s.attempt(c.append, 0, 0, *chunk(1, 2, 2, 71))
    s.observe(c, [0])


@pitfall("s11-blocks-one-at-a-time", "a multi-block append that cannot get all its blocks takes none", "out-of-blocks copy-on-write")
def s11(s: Script) -> None:
    c = s.new(5, 2, 2, 1, 2)
    c.add_seq(0)
    for layer in (0, 1):
        c.append(0, layer, *chunk(1, 3, 2, 80 + layer))
    c.fork(0, 1)
    s.attempt(c.append, 1, 0, *chunk(1, 6, 2, 82))
    s.observe(c, [0, 1])
    s.attempt(c.append, 0, 1, *chunk(1, 6, 2, 83))
    s.observe(c, [0, 1])
    c.append(1, 0, *chunk(1, 4, 2, 84))
    s.observe(c, [0, 1])


@pitfall("s12-gather-to-longest-layer", "each layer gathers its own length", "layers")
def s12(s: Script) -> None:
    c = s.new(16, 2, 3, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 5, 2, 90))
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 2, 2, 91))
    s.observe(c, [0])
    c.append(0, 2, *chunk(1, 7, 2, 92))
    s.observe(c, [0])


@pitfall("s13-empty-chunk-accepted", "an append of T = 0 positions is refused", "error-table")
def s13(s: Script) -> None:
    c = s.new(4, 2, 1, 2, 3)
    c.add_seq(0)
    c.append(0, 0, *chunk(2, 1, 3, 100))
    s.attempt(c.append, 0, 0, np.zeros((2, 0, 3), np.float16), np.zeros((2, 0, 3), np.float16))
    s.observe(c, [0])
