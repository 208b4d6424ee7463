"""Seeded random sessions of add, fork, append and free, every observable after every call: what
no hand-written vector thought of, still reproducible from the seed.
"""

from __future__ import annotations

import numpy as np

from oracle.as_impl import OutOfBlocks
from paged_gate.vectors.script import Script, Vector, chunk


def random_session(seed: int) -> Vector:
    """A seeded random session of add, fork, append and free, every observable after every call."""

    def make() -> Script:
        s = Script(f"random-{seed}", f"seeded random add, fork, append and free (seed {seed}), every observable after every call", "random out-of-blocks copy-on-write allocation-order layers")
        rng = np.random.default_rng(seed)
        n_blocks, bs, layers, heads, dims = 10, 3, 2, 1, 2
        c = s.new(n_blocks, bs, layers, heads, dims)
        live: list[int] = []
        next_id = 0
        for _ in range(120):
            op = rng.choice(["add", "fork", "append", "append", "append", "free"]) if live else "add"
            if op in ("add", "fork") and len(live) >= 5:
                op = "free"
            if op == "add":
                c.add_seq(next_id)
                live.append(next_id)
                next_id += 1
            elif op == "fork":
                c.fork(live[int(rng.integers(len(live)))], next_id)
                live.append(next_id)
                next_id += 1
            elif op == "append":
                args = (live[int(rng.integers(len(live)))], int(rng.integers(layers)), *chunk(heads, int(rng.integers(1, 2 * bs + 2)), dims, int(rng.integers(2**16))))
                try:
                    c.append(*args)
                except OutOfBlocks:
                    pass
            else:
                c.free(live.pop(int(rng.integers(len(live)))))
            s.observe(c, live)
        return s

    make.__name__ = f"random_{seed}"
    return make


VECTORS: list[Vector] = [random_session(seed) for seed in (1, 2, 3)]
