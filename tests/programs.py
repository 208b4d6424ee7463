"""Random programs of public calls, for the property tests of every area: the geometry and
append strategies, a runner that applies the valid calls of a program, and the size of an
append worked out from public calls only (so a port is judged by what it shows).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import strategies as st

import harness
from oracle import ModelKVCache
from strategies import INPUT_DTYPES, blocks_needed, geometries, held_elsewhere, make_chunk

# (block_size, n_layers, n_kv_heads, d_head): each test sizes its own pool.
GEOMETRY = geometries(num_blocks=st.just(1)).map(lambda g: tuple(g[1:]))

# (seq index, layer index (mod L), tokens, seed, dtype, tricky)
APPEND = st.tuples(
    st.integers(0, 2), st.integers(0, 2), st.integers(1, 9), st.integers(0, 2**16), st.sampled_from(INPUT_DTYPES), st.booleans()
)

# add, fork, append and free, with ids from a small range: many are invalid and skipped by run_program.
OP = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("fork"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("append"), APPEND.map(lambda a: a[1:]), st.integers(0, 5)),
    st.tuples(st.just("free"), st.integers(0, 5)),
)


def new_cache(num_blocks: int, geometry: tuple[int, int, int, int]) -> Any:
    harness.begin_example()  # each example makes one cache: its calls are the transcript of a failure
    return harness.impl().PagedKVCache(num_blocks, *geometry)


def expected_gather(chunks: list[np.ndarray], heads: int, dims: int) -> np.ndarray:
    if not chunks:
        return np.zeros((heads, 0, dims), dtype=np.float16)
    return np.concatenate([c.astype(np.float16) for c in chunks], axis=1)


def public_blocks_needed(cache: Any, live: list[int], seq: int, layer: int, tokens: int, block_size: int) -> int:
    """From public calls only: blocks an append would take (copies of blocks another live table holds, plus new ones)."""
    others = held_elsewhere(cache.block_table(s).tolist() for s in live if s != seq)
    return blocks_needed(cache.block_table(seq).tolist(), others, cache.seq_len(seq, layer), tokens, block_size)


def run_program(cache: Any, ops: list[tuple[Any, ...]], geometry: tuple[int, int, int, int]) -> list[int]:
    """Apply the valid operations among `ops` (OutOfBlocks tolerated); return the live ids."""
    _, n_layers, heads, dims = geometry
    live: list[int] = []
    for op in ops:
        if op[0] == "add" and op[1] not in live:
            cache.add_seq(op[1])
            live.append(op[1])
        elif op[0] == "fork" and op[1] in live and op[2] not in live:
            cache.fork(op[1], op[2])
            live.append(op[2])
        elif op[0] == "append" and op[2] in live:
            layer, tokens, seed, dtype, tricky = op[1]
            try:
                cache.append(op[2], layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky))
            except harness.impl().OutOfBlocks:
                pass
        elif op[0] == "free" and op[1] in live:
            cache.free(op[1])
            live.remove(op[1])
    return live


def both(impl: ModuleType, *sizes: int) -> tuple[Any, ModelKVCache]:
    """A cache of the implementation under test and the model, of the same sizes."""
    return impl.PagedKVCache(*sizes), harness.model(*sizes)


def run(caches: tuple[Any, ...], call: str, *args: Any) -> None:
    """The same call on every cache (the cache under test and the model, in step)."""
    for c in caches:
        getattr(c, call)(*args)
