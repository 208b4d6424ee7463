"""Seeded random sessions of add, fork, append and free, every observable after every call: what
no hand-written vector thought of, still reproducible from the seed (the calls: testkit.random_ops,
the generator the catalog's conservation test draws from too).
"""

from __future__ import annotations

import numpy as np

from oracle.as_impl import OutOfBlocks
from testkit.random_ops import RandomOps
from vectorgen.script import Script, Vector


def random_session(seed: int) -> Vector:
    """A seeded random session of add, fork, append and free, every observable after every call."""

    def make() -> Script:
        s = Script(f"random-{seed}", f"seeded random add, fork, append and free (seed {seed}), every observable after every call", "random out-of-blocks copy-on-write allocation-order layers")
        n_blocks, bs, layers, heads, dims = 10, 3, 2, 1, 2
        c = s.new(n_blocks, bs, layers, heads, dims)
        ops = RandomOps(np.random.default_rng(seed), layers=layers, block_size=bs, heads=heads, dims=dims, max_live=5)
        for op, args in ops.calls(120):
            try:
                getattr(c, op)(*args)
            except OutOfBlocks:  # only an append can run out; it changes nothing
                pass
            s.observe(c, ops.live)
        return s

    make.__name__ = f"random_{seed}"
    return make


VECTORS: list[Vector] = [random_session(seed) for seed in (1, 2, 3)]
