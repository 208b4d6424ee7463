"""The seed's four prose properties, as Hypothesis property tests.

1. gather after any sequence of appends equals the concatenation of what was appended, in float16;
2. a fork then an append to the child never changes the parent;
3. freeing every sequence returns every block;
4. an OutOfBlocks append changes nothing.

Each runs on the implementation under test (`harness.impl()`) through public calls only;
expected values come from the appended arrays themselves, not from another cache.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import harness
from strategies import INPUT_DTYPES, blocks_needed, geometries, held_elsewhere, make_chunk

# (block_size, n_layers, n_kv_heads, d_head): each test sizes its own pool.
GEOMETRY = geometries(num_blocks=st.just(1)).map(lambda g: tuple(g[1:]))

# (seq index, layer index (mod L), tokens, seed, dtype, tricky)
APPEND = st.tuples(
    st.integers(0, 2), st.integers(0, 2), st.integers(1, 9), st.integers(0, 2**16), st.sampled_from(INPUT_DTYPES), st.booleans()
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


# -- 1 ---------------------------------------------------------------------------------------------


@given(geometry=GEOMETRY, appends=st.lists(APPEND, max_size=20))
def test_gather_is_the_concatenation_of_the_appends_in_float16(
    geometry: tuple[int, int, int, int], appends: list[tuple[int, int, int, int, str, bool]]
) -> None:
    bs, n_layers, heads, dims = geometry
    totals = [[0] * n_layers for _ in range(3)]
    for s, layer, tokens, *_ in appends:
        totals[s][layer % n_layers] += tokens
    needed = sum(math.ceil(max(t) / bs) for t in totals)
    num_blocks = max(1, needed)  # exactly enough
    cache = new_cache(num_blocks, geometry)
    appended: dict[tuple[int, int], list[np.ndarray]] = {(s, li): [] for s in range(3) for li in range(n_layers)}
    appended_v: dict[tuple[int, int], list[np.ndarray]] = {key: [] for key in appended}
    for s in range(3):
        cache.add_seq(s)
    for s, layer, tokens, seed, dtype, tricky in appends:
        li = layer % n_layers
        k, v = make_chunk(heads, tokens, dims, seed, dtype, tricky)
        cache.append(s, li, k, v)
        appended[s, li].append(k)
        appended_v[s, li].append(v)
    for (s, li), chunks in appended.items():
        k, v = cache.gather(s, li)
        assert harness.same_bits(k, expected_gather(chunks, heads, dims)), f"K of sequence {s} layer {li}"
        assert harness.same_bits(v, expected_gather(appended_v[s, li], heads, dims)), f"V of sequence {s} layer {li}"
        assert cache.seq_len(s, li) == sum(c.shape[1] for c in chunks)
    # no table holds a block more than ceil(longest layer / B)
    assert cache.num_free_blocks() == num_blocks - needed
    assert [len(cache.block_table(s)) for s in range(3)] == [math.ceil(max(t) / bs) for t in totals]
    cache.close()


# -- 2 ---------------------------------------------------------------------------------------------


@given(
    geometry=GEOMETRY,
    prompt=st.lists(APPEND, max_size=8),
    grandchild=st.booleans(),
    child_appends=st.lists(APPEND, min_size=1, max_size=8),
    spare=st.integers(0, 6),
)
def test_a_fork_then_an_append_to_the_child_never_changes_the_parent(
    geometry: tuple[int, int, int, int],
    prompt: list[tuple[int, int, int, int, str, bool]],
    grandchild: bool,
    child_appends: list[tuple[int, int, int, int, str, bool]],
    spare: int,
) -> None:
    bs, n_layers, heads, dims = geometry
    lens = [0] * n_layers
    for _, layer, tokens, *_ in prompt:
        lens[layer % n_layers] += tokens
    num_blocks = math.ceil(max(lens) / bs) + spare + 1
    cache = new_cache(num_blocks, geometry)
    parent, child = 0, 1
    cache.add_seq(parent)
    for _, layer, tokens, seed, dtype, tricky in prompt:  # layers end at different lengths
        cache.append(parent, layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky))
    cache.fork(parent, child)
    if grandchild:  # the writer is a fork of a fork; the parent shares through two levels
        cache.fork(child, 2)
        child = 2
    before = harness.snapshot(cache, [parent], n_layers)
    for _, layer, tokens, seed, dtype, tricky in child_appends:
        try:
            cache.append(child, layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky))
        except harness.impl().OutOfBlocks:
            note("the child ran out")
        after = harness.snapshot(cache, [parent], n_layers)
        for key in before:
            if key.startswith(("table", "len", "k ", "v ")):
                assert after[key] == before[key], f"the parent's {key} changed"
    cache.close()


# -- 3 ---------------------------------------------------------------------------------------------

OP = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("fork"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("append"), APPEND.map(lambda a: a[1:]), st.integers(0, 5)),
    st.tuples(st.just("free"), st.integers(0, 5)),
)


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


@given(geometry=GEOMETRY, num_blocks=st.integers(1, 16), ops=st.lists(OP, max_size=40), order=st.randoms(use_true_random=False))
def test_freeing_every_sequence_returns_every_block(
    geometry: tuple[int, int, int, int], num_blocks: int, ops: list[tuple[Any, ...]], order: Any
) -> None:
    cache = new_cache(num_blocks, geometry)
    live = run_program(cache, ops, geometry)
    held = set()
    for s in live:
        held.update(cache.block_table(s).tolist())
    assert cache.stats()["used"] == len(held), "used blocks are not exactly those the live tables hold"
    order.shuffle(live)
    for s in live:
        cache.free(s)
    stats = cache.stats()
    assert stats["free"] == num_blocks and stats["used"] == 0 and cache.num_free_blocks() == num_blocks, stats
    # every block is really free again: a fresh sequence can take them all, lowest id first
    bs, n_layers, heads, dims = geometry
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(heads, num_blocks * bs, dims, 1, "float32", False))
    assert cache.block_table(0).tolist() == list(range(num_blocks))
    cache.close()


# -- 4 ---------------------------------------------------------------------------------------------


@given(
    geometry=GEOMETRY,
    num_blocks=st.integers(1, 10),
    ops=st.lists(OP, max_size=30),
    pick=st.integers(0, 5),
    layer=st.integers(0, 2),
    excess=st.integers(1, 3),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(INPUT_DTYPES),
)
def test_an_out_of_blocks_append_changes_nothing(
    geometry: tuple[int, int, int, int],
    num_blocks: int,
    ops: list[tuple[Any, ...]],
    pick: int,
    layer: int,
    excess: int,
    seed: int,
    dtype: str,
) -> None:
    bs, n_layers, heads, dims = geometry
    cache = new_cache(num_blocks, geometry)
    live = run_program(cache, ops, geometry)
    if not live:
        cache.add_seq(0)
        live = [0]
    seq, li = live[pick % len(live)], layer % n_layers
    free = cache.num_free_blocks()
    tokens = 1
    while public_blocks_needed(cache, live, seq, li, tokens, bs) < free + excess:
        tokens += 1
    note(f"append of {tokens} tokens to sequence {seq} layer {li} needs {free + excess} blocks, {free} free")
    before = harness.snapshot(cache, live, n_layers)
    with pytest.raises(harness.impl().OutOfBlocks):
        cache.append(seq, li, *make_chunk(heads, tokens, dims, seed, dtype, False))
    assert harness.snapshot(cache, live, n_layers) == before
    # and the cache still works: the largest append that fits succeeds
    while tokens > 1 and public_blocks_needed(cache, live, seq, li, tokens, bs) > free:
        tokens -= 1
    if public_blocks_needed(cache, live, seq, li, tokens, bs) <= free:
        k, v = make_chunk(heads, tokens, dims, seed, dtype, False)
        old_k, old_v = cache.gather(seq, li)
        cache.append(seq, li, k, v)
        new_k, new_v = cache.gather(seq, li)
        assert harness.same_bits(new_k, np.concatenate([old_k, k.astype(np.float16)], axis=1))
        assert harness.same_bits(new_v, np.concatenate([old_v, v.astype(np.float16)], axis=1))
    cache.close()
