"""paged's fast paths (paged/fast.py) against its general path (paged/cache.py), on generated programs.

Two caches take the same calls: `paged.cache.PagedKVCache`, the general path alone, and
`paged.PagedKVCache`, the same class with the fast paths. After every call their answers (values
bit for bit, or the error's type) and their whole state (tables, lengths, reference counts, the free
pool and the cached blocks, the prefix keys, both pools bit for bit) must be equal: the general path
is the expectation, so a fast path that does anything else fails here. Each fast path must also be
taken exactly when its condition holds, written out below from its docstring: one never taken, or
taken where it must not be, fails too (the first is only slower, so nothing else in the suite would
see it). These test paged itself, whatever implementation the suite is run against.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any, Callable
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import paged
import paged.cache
import paged.fast

pytestmark = pytest.mark.oracle

GENERAL = paged.cache.PagedKVCache
FAST = paged.PagedKVCache

# Mostly calls that succeed, on few sequences, so that programs reach every path; some of each error.
SEQ = st.integers(0, 2)
TOKENS = st.lists(st.integers(0, 1), max_size=12)
LAYER = st.sampled_from([0, 0, 1, 1, -1, 2])  # -1 and 2 (and 1 when L = 1) are out of range
T = st.sampled_from([1, 1, 1, 1, 2, 3, 4, 5, 0])  # 0 is refused
KIND = st.sampled_from(["f16"] * 6 + ["f32", "list", "np-id", "v-longer", "2-d"])
APPEND = st.tuples(st.just("append"), SEQ, LAYER, T, KIND)
GATHER = st.tuples(st.just("gather"), SEQ, LAYER)
OPS = st.lists(
    st.one_of(
        APPEND, APPEND, APPEND, APPEND, GATHER, GATHER,
        st.tuples(st.just("add_seq"), SEQ, TOKENS),
        st.tuples(st.just("extend"), SEQ, TOKENS),
        st.tuples(st.just("fork"), SEQ, SEQ),
        st.tuples(st.just("free"), SEQ),
    ),
    min_size=15,
    max_size=40,
).map(lambda ops: [("add_seq", 0, [0] * 12), ("add_seq", 1, [0] * 12), *ops, ("close",), ("gather", 0, 0)])
SIZES = st.tuples(st.integers(2, 10), st.integers(1, 4), st.integers(1, 2), st.integers(1, 2), st.integers(1, 2), st.booleans())
# Each layer's window or None (full attention), or no layer_windows at all: hybrid caches of one or two groups.
GEOMETRY = SIZES.flatmap(
    lambda g: st.tuples(
        *map(st.just, g),
        st.none() | st.lists(st.none() | st.integers(2, 5), min_size=g[2], max_size=g[2]).map(tuple),
    )
)


def one_run(ids: list[int]) -> bool:
    """Whether `ids` are b, b+1, ... (at least one)."""
    return bool(ids) and ids == list(range(ids[0], ids[0] + len(ids)))


def chunk(op: tuple[Any, ...], n_kv_heads: int, d_head: int, step: int) -> tuple[Any, Any, Any]:
    """The seq id and the k, v an append op passes: values distinct per call, in the op's input kind."""
    _, seq, _, tokens, kind = op
    k = (np.arange(n_kv_heads * tokens * d_head).reshape(n_kv_heads, tokens, d_head) + 100 * step) / 8
    v = -k - 0.5
    if kind == "f32":
        return seq, k.astype(np.float32), v.astype(np.float32)
    if kind == "list":
        return seq, k.tolist(), v.tolist()
    if kind == "v-longer":  # k right, v one position longer
        v = np.concatenate([v, v[:, :1]], axis=1)
    if kind == "2-d":
        k, v = k[0], v[0]
    return (np.int64(seq) if kind == "np-id" else seq), k.astype(np.float16), v.astype(np.float16)


def answer(cache: Any, method: str, args: tuple[Any, ...]) -> Any:
    """What a call returns (a gather's arrays as their bytes, dtype, shape and contiguity), or its error's type."""
    try:
        out = getattr(cache, method)(*args)
    except Exception as exc:  # noqa: BLE001 - compared by type
        return type(exc)
    if method == "gather":
        return [(a.dtype, a.shape, a.flags.c_contiguous, a.tobytes()) for a in out]
    return out


def state(cache: Any) -> Any:
    """Everything a cache keeps, as plain values."""
    if cache._closed:
        return "closed"
    alloc = cache._alloc

    def key(node: Any) -> list[tuple[int, ...]]:
        return [] if node.parent is None else [*key(node.parent), node.tokens]

    groups = cache._groups  # each keeps its tables and nodes per sequence id, and its keys
    seqs = {sid: ([g.tables[sid] for g in groups], s.lens, s.tokens, [[key(n) for n in g.nodes[sid]] for g in groups]) for sid, s in cache._seqs.items()}
    keys = [sorted((b, key(n)) for b, n in g.index._node_of.items()) for g in groups]
    pools = cache._k.view(np.uint16).tobytes(), cache._v.view(np.uint16).tobytes()
    return seqs, alloc._refs, sorted(alloc._free), list(alloc._cached), alloc.evictions, keys, pools


def append_is_fast(cache: Any, seq: Any, layer: Any, k: Any, v: Any) -> bool:
    """FAST PATH 1's condition: an open cache without prefix caching, an int id of a live sequence, an int
    layer in range, k and v float16 ndarrays of one shape [H, T, D] with T >= 1, within one block the
    table already has and that no other live sequence holds."""
    if cache._closed or cache._prefix or type(seq) is not int or seq not in cache._seqs:
        return False
    if type(layer) is not int or not 0 <= layer < cache.n_layers:
        return False
    if not all(type(a) is np.ndarray and a.dtype == np.float16 for a in (k, v)) or k.shape != v.shape:
        return False
    if k.ndim != 3 or k.shape[0] != cache.n_kv_heads or k.shape[2] != cache.d_head or k.shape[1] == 0:
        return False
    group = cache._layer_groups[layer]  # the table of the layer's group
    start, bs, table = cache._seqs[seq].lens[layer], cache.block_size, group.tables[seq]
    if start % bs + k.shape[1] > bs or start // bs >= len(table):
        return False
    holders = sum(t.count(table[start // bs]) for g in cache._groups for t in g.tables.values())
    return holders == 1


class Spy:
    """Records the calls the fast cache makes to the general path's methods and to `take_heads`."""

    def __init__(self, fast: Any) -> None:
        self.fast = fast
        self.calls: list[tuple[str, Any]] = []

    def wrap(self, name: str, original: Callable[..., Any], method: bool = True) -> Callable[..., Any]:
        def spy(*args: Any) -> Any:
            if not method or args[0] is self.fast:
                self.calls.append((name, args if method else args[1]))
            return original(*args)

        return spy

    def patches(self) -> ExitStack:
        stack = ExitStack()
        for name in ("append", "_seq_layer", "_gather_blocks"):
            stack.enter_context(mock.patch.object(GENERAL, name, self.wrap(name, getattr(GENERAL, name))))
        stack.enter_context(mock.patch.object(paged.fast, "take_heads", self.wrap("take_heads", paged.fast.take_heads, method=False)))
        return stack

    def take(self) -> list[tuple[str, Any]]:
        calls, self.calls = self.calls, []
        return calls


def run_program(geometry: tuple[Any, ...], ops: list[tuple[Any, ...]]) -> None:
    """The ops on both caches in step: equal answers, equal states, each fast path taken when it should be."""
    *sizes, prefix, windows = geometry
    general = GENERAL(*sizes, prefix_caching=prefix, layer_windows=windows)
    fast = FAST(*sizes, prefix_caching=prefix, layer_windows=windows)
    spy = Spy(fast)
    with spy.patches():
        for step, op in enumerate(ops):
            method, args = op[0], op[1:]
            if method == "append":
                seq, k, v = chunk(op, fast.n_kv_heads, fast.d_head, step)
                args = (seq, op[2], k, v)
            before = {sid: [list(g.tables[sid]) for g in fast._groups] for sid in fast._seqs} if not fast._closed else {}
            fast_path = method == "append" and append_is_fast(fast, *args)
            assert answer(fast, method, args) == answer(general, method, args), (method, args)
            assert state(fast) == state(general), (method, args)
            check_paths(method, args, fast, fast_path, before, spy.take())


@given(GEOMETRY, OPS)
def test_the_fast_paths_agree_with_the_general_path(geometry: tuple[Any, ...], ops: list[tuple[Any, ...]]) -> None:
    run_program(geometry, ops)


# Programs that reach the edges of the fast paths, whatever the profile's budget: (block_size,
# n_layers, n_kv_heads, d_head, prefix caching) and the ops, then a gather of every layer of 0 and 1.
EDGES = {
    "a decode step into a block a fork shares": ((4, 1, 1, 1, False), [("add_seq", 0, []), ("append", 0, 0, 2, "f16"), ("fork", 0, 1), ("append", 0, 0, 1, "f16"), ("append", 1, 0, 1, "f16")]),
    "an empty float16 chunk into a block it holds": ((4, 1, 1, 1, False), [("add_seq", 0, []), ("append", 0, 0, 1, "f16"), ("append", 0, 0, 0, "f16")]),
    "chunks of 2 and 3 within one block": ((8, 2, 2, 2, False), [("add_seq", 0, []), ("append", 0, 1, 1, "f16"), ("append", 0, 1, 2, "f16"), ("append", 0, 1, 3, "f16")]),
    "a chunk that ends at its block's end, then one past it": ((4, 1, 2, 1, False), [("add_seq", 0, []), ("append", 0, 0, 1, "f16"), ("append", 0, 0, 3, "f16"), ("append", 0, 0, 1, "f16")]),
    "a v one position longer than k": ((4, 1, 1, 2, False), [("add_seq", 0, []), ("append", 0, 0, 1, "f16"), ("append", 0, 0, 1, "v-longer")]),
    "2-d chunks": ((4, 1, 1, 2, False), [("add_seq", 0, []), ("append", 0, 0, 1, "f16"), ("append", 0, 0, 1, "2-d")]),
    "a layer behind the block another layer took": ((2, 2, 1, 1, False), [("add_seq", 0, []), ("append", 0, 0, 2, "f16"), ("append", 0, 1, 1, "f16"), ("append", 0, 1, 1, "f16")]),
    "decode steps with prefix caching on": ((4, 1, 1, 1, True), [("add_seq", 0, [1] * 6), ("append", 0, 0, 1, "f16"), ("append", 0, 0, 1, "f16")]),
    # The child's table becomes [0, 3, 2]: its ends look like a run, its middle block is a copy.
    "a copy on write between the ends of the table": ((1, 2, 1, 1, False), [
        ("add_seq", 0, []), ("append", 0, 0, 2, "f16"), ("append", 0, 1, 1, "f16"), ("fork", 0, 1),
        ("append", 1, 0, 1, "f16"), ("append", 1, 1, 1, "f16"), ("append", 1, 1, 1, "f16")]),
    # Sequence 0 writes two whole blocks to ids 1 and 3 (not a run); sequence 1's table is then [4, 5].
    "whole blocks written apart, and a run that starts past 0": ((1, 1, 2, 1, False), [
        ("add_seq", 0, []), ("add_seq", 1, []), ("append", 0, 0, 1, "f16"), ("append", 1, 0, 1, "f16"), ("append", 0, 0, 1, "f16"),
        ("append", 1, 0, 1, "f16"), ("free", 1), ("append", 0, 0, 2, "f16"), ("add_seq", 1, []), ("append", 1, 0, 2, "f16")]),
    # Sequence 0's table becomes [0, 2, 4], 5 positions: scattered whole blocks, then a part-full one.
    "scattered blocks and a part-full last one, two heads": ((2, 1, 2, 1, False), [
        ("add_seq", 0, []), ("add_seq", 1, []), ("append", 0, 0, 2, "f16"), ("append", 1, 0, 2, "f16"), ("append", 0, 0, 2, "f16"),
        ("append", 1, 0, 2, "f16"), ("append", 0, 0, 1, "f16")]),
    # Sequence 1's table becomes [0, 4, 5]: a hit on block 0, then two new blocks that are a run.
    "a prefix hit far from the blocks after it": ((1, 1, 1, 1, True), [
        ("add_seq", 0, [0, 1, 1, 1]), ("append", 0, 0, 4, "f16"), ("add_seq", 1, [0, 5, 5]), ("append", 1, 0, 2, "f16")]),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_the_fast_paths_at_their_edges(name: str) -> None:
    (block_size, layers, heads, dims, prefix), ops = EDGES[name]
    program = [*ops, *(("gather", seq, layer) for seq in (0, 1) for layer in range(layers))]
    run_program((8, block_size, layers, heads, dims, prefix, None), program)


def check_paths(method: str, args: tuple[Any, ...], fast: Any, fast_path: bool, before: dict[int, list[list[int]]], calls: list[tuple[str, Any]]) -> None:
    """Each fast path taken exactly when its condition holds."""
    names = [name for name, _ in calls]
    taken = method in ("append", "gather") and not fast._closed and type(args[0]) is int and args[0] in fast._seqs and type(args[1]) is int and 0 <= args[1] < fast.n_layers
    if method == "append":
        assert names.count("append") == (0 if fast_path else 1), (args, names)
        # FAST PATH 4 in the general append: the general id and layer checks only for what it does not take.
        assert names.count("_seq_layer") == (0 if fast_path or taken else 1), (args, names)
    if method != "gather":
        return
    assert names.count("_seq_layer") == (0 if taken else 1), (args, names)
    length = fast._seqs[args[0]].lens[args[1]] if taken else 0
    start = fast._layer_groups[args[1]].visible_from(length) if taken else 0
    # FAST PATH 2 takes a gather from the start of a block; a window that starts inside one is the general copy.
    assert names.count("_gather_blocks") == (1 if start % fast.block_size else 0), (args, names)
    if taken and not start % fast.block_size:
        # FAST PATH 2: one take per pool pair of heads unless the full blocks are one run.
        bs = fast.block_size
        full = before[args[0]][fast._groups.index(fast._layer_groups[args[1]])][start // bs : length // bs]
        takes = [call for name, call in calls if name == "take_heads"]
        assert len(takes) == (0 if one_run(full) else 2), (full, names)
        assert all(ids.tolist() == full for ids in takes), (full, takes)


def test_a_decode_step_into_a_private_block_never_takes_the_general_path() -> None:
    """The benchmark's hot path, spelt out: a one-token float16 append after the first of its block."""
    general, cache = GENERAL(4, 4, 2, 2, 3), FAST(4, 4, 2, 2, 3)
    one = np.ones((2, 1, 3), np.float16)
    for c in (general, cache):
        c.add_seq(0)
        c.append(0, 0, one, one)
    spy = Spy(cache)
    with spy.patches():
        for pos in range(1, 4):
            for c in (general, cache):
                c.append(0, 0, pos * one, -pos * one)
        assert spy.take() == []
        for c in (general, cache):
            c.append(0, 0, one, one)  # position 4: a new block, the general path
        assert [name for name, _ in spy.take()] == ["append"]
    assert state(cache) == state(general)
