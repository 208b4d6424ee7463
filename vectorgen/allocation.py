"""The pinned allocation policy and its neighbours: the lowest free block first, in position order;
copy on write across layers; a pool of one block, where a second block or a copy runs out.
"""

from __future__ import annotations

import numpy as np

from vectorgen.script import Script, Vector, chunk, collect

VECTORS: list[Vector] = []
vector = collect(VECTORS)


@vector
def lowest_free_block() -> Script:
    s = Script(
        "allocation-lowest-free",
        "every block taken is the lowest free one, after frees and copies, in position order "
        "(the last block freed is not the lowest, so a free stack or a free queue hands out others)",
        "allocation-order copy-on-write",
    )
    c = s.new(12, 2, 2, 2, 3)
    for seq in (0, 1, 2):
        c.add_seq(seq)
        c.append(seq, 0, *chunk(2, 3, 3, 130 + seq))  # blocks 0 1, 2 3, 4 5
    c.free(0)  # releases 1, then 0
    c.free(2)  # releases 5, then 4: a stack's top is now 4, a queue's front 6; the lowest free is 0
    c.fork(1, 3)
    c.append(3, 0, *chunk(2, 4, 3, 134))  # copies block 3 (to 0), then new blocks 1 and 4
    s.observe(c, [1, 3])
    c.free(1)
    c.append(3, 1, *chunk(2, 7, 3, 135))
    c.append(3, 1, *chunk(2, 2, 3, 136))
    s.observe(c, [3])
    return s


@vector
def ids_in_the_pool() -> Script:
    s = Script(
        "allocation-ids-in-the-pool",
        "every block of a pool of three, then of a pool of one, in a table: each id is in 0 .. N-1 "
        "(under allocation=any too, where ids are names: a port that reports 1 .. N fails on the last block)",
        "block-ids allocation-order",
    )
    c = s.new(3, 1, 1, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 1, 150))  # blocks 0, 1, 2: the whole pool
    s.observe(c, [0])
    c.free(0)
    for seq in (1, 2):
        c.add_seq(seq)
        c.append(seq, 0, *chunk(1, 1, 1, 150 + seq))  # one block each
    c.fork(2, 3)
    c.append(3, 0, *chunk(1, 1, 1, 153))  # the child's second position: the pool's last free block
    s.observe(c, [1, 2, 3])
    one = s.new(1, 1, 1, 1, 1)
    one.add_seq(0)
    one.append(0, 0, *chunk(1, 1, 1, 154))
    s.observe(one, [0])
    return s


@vector
def copy_on_write_across_layers() -> Script:
    s = Script(
        "cow-across-layers",
        "a layer catching up inside shared blocks copies each, in position order, with every layer's data "
        "(the other layer's positions and this layer's earlier ones)",
        "copy-on-write layers allocation-order",
    )
    c = s.new(12, 2, 2, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 6, 2, 140))  # layer 0: blocks 0, 1, 2 full
    c.append(0, 1, *chunk(1, 3, 2, 142))  # layer 1: positions 0..2, block 1 half full
    c.fork(0, 1)
    c.append(1, 1, *chunk(1, 5, 2, 141))  # copies blocks 1 and 2 (with layer 0's positions 2..5 and layer 1's 2), then a new one
    s.observe(c, [0, 1])
    return s


@vector
def pool_of_one_block() -> Script:
    s = Script("out-of-blocks-one-block-pool", "a pool of one block: a second block, or a copy of the shared one, runs out", "out-of-blocks copy-on-write")
    c = s.new(1, 3, 1, 1, 1)
    one = np.ones((1, 1, 1), np.float16)
    c.add_seq(0)
    c.append(0, 0, np.ones((1, 2, 1), np.float16), np.ones((1, 2, 1), np.float16))
    s.attempt(c.append, 0, 0, np.ones((1, 2, 1), np.float16), np.ones((1, 2, 1), np.float16))
    c.fork(0, 1)
    for writer in (1, 0):
        s.attempt(c.append, writer, 0, one, one)
    s.observe(c, [0, 1])
    c.free(0)
    c.append(1, 0, one * 5, one * 6)
    s.observe(c, [1])
    return s
