"""Seeded random operations, the one generator behind the random vectors (ci/vectors/random-N.txt,
vectorgen/random_sessions.py) and the catalog's block-conservation test
(tests/test_catalog.py::test_random_ops_conserve_blocks): numpy only, reproducible from the seed.

Each call is `add_seq` (a new id), `fork` (a live parent onto a new id), `append` (a live sequence,
a layer, 1 to 2 * block_size + 1 tokens: enough to cross a block and, on a shared block, to copy on
write) or `free` (a live sequence), appends three times as often as each of the others; at
`max_live` live sequences an add or a fork becomes a free. Which sequences are live does not
depend on the answers (only `append` can run out of blocks, and a refused append changes
nothing), so a caller may feed the calls to several caches and compare them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from testkit.chunks import make_chunk

KINDS = ("add", "fork", "append", "append", "append", "free")


class RandomOps:
    """The calls drawn from `rng`, for a cache of `layers` layers, blocks of `block_size` and
    chunks of `heads` x `dims` (K and V of `dtype`, each built from a seed the generator draws).
    `live` is the sequences live after the last call drawn, in the order they were made."""

    def __init__(self, rng: np.random.Generator, *, layers: int, block_size: int, heads: int, dims: int, max_live: int, dtype: str = "float16") -> None:
        self.rng = rng
        self.layers, self.block_size, self.heads, self.dims = layers, block_size, heads, dims
        self.max_live = max_live
        self.dtype = dtype
        self.live: list[int] = []
        self.next_id = 0

    def calls(self, count: int) -> Iterator[tuple[str, tuple[Any, ...]]]:
        """`count` calls, each (method name, arguments)."""
        for _ in range(count):
            yield self.draw()

    def draw(self) -> tuple[str, tuple[Any, ...]]:
        kind = str(self.rng.choice(KINDS)) if self.live else "add"
        if kind in ("add", "fork") and len(self.live) >= self.max_live:
            kind = "free"
        if kind == "add":
            return "add_seq", (self.new_id(),)
        if kind == "fork":
            parent = self.pick()
            return "fork", (parent, self.new_id())
        if kind == "append":
            seq, layer = self.pick(), int(self.rng.integers(self.layers))
            tokens, seed = int(self.rng.integers(1, 2 * self.block_size + 2)), int(self.rng.integers(2**16))
            return "append", (seq, layer, *make_chunk(self.heads, tokens, self.dims, seed, self.dtype))
        return "free", (self.live.pop(int(self.rng.integers(len(self.live)))),)

    def pick(self) -> int:
        return self.live[int(self.rng.integers(len(self.live)))]

    def new_id(self) -> int:
        self.live.append(self.next_id)
        self.next_id += 1
        return self.next_id - 1
