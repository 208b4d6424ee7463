"""Page tables for kernels (CONTRACT.md, "Page tables for kernels (opt-in capability `page_tables`)").

Scripted cases the state machines reach only by chance, each checked after every call by
`kernel_pages.assert_page_tables` (every live sequence, every layer, P = B and the largest P below B
dividing it: the oracle's page tables and slot mappings, and the cache's pages read back equal to its
gathers): the issue's example (prefix caching, a full-attention and a windowed layer, B = 4) at every
length from 0 to past three blocks, P = 4, 2 and 1; forks and copy on write; a windowed prefix hit served
from the right (its first entries -1); three groups. Then bad input: each gets the contract's error and
changes nothing.

Skipped for an implementation without the capability `page_tables` (a module whose PagedKVCache lacks the
three calls; a driver that does not announce it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oracle import ModelKVCache
from tests import harness, skips
from tests.assertions import assert_equal
from tests.kernel_pages import assert_page_tables, page_sizes
from tests.programs import both, refused, run
from tests.strategies import make_chunk

pytestmark = pytest.mark.needs("page_tables")

Pair = tuple[Any, ModelKVCache]


def pair(*sizes: int, **options: Any) -> Pair:
    """A cache under test and the oracle, the oracle lent to a cache seen in its ids (allocation=any)."""
    harness.begin_example()
    cache, model = both(harness.impl(), *sizes, **options)
    harness.adopt(cache, model)
    return cache, model


def grow(p: Pair, seq: int, layer: int, tokens: int, seed: int) -> None:
    cache, model = p
    run(p, "append", seq, layer, *make_chunk(model.n_kv_heads, tokens, model.d_head, seed, "float32"))


def check(p: Pair, when: str) -> None:
    """Every observable the oracle's, then every live sequence's page tables (`assert_page_tables`)."""
    cache, model = p
    harness.assert_matches_model(cache, model, when=when)
    assert_page_tables(cache, model, model.live(), when)


def test_the_issue_example_at_every_length() -> None:
    """prefix_caching=True, layer_windows=(None, 4), B = 4: one token at a time to both layers, lengths 0 to 13
    (0, 1, B - 1, B, B + 1 and every multiple of P among them), pages of 4, 2 and 1, the slots of every span of
    positions; at a multiple of B, last_page_len is B, not 0."""
    p = pair(16, 4, 2, 2, 3, prefix_caching=True, layer_windows=(None, 4))
    cache, model = p
    run(p, "add_seq", 0, list(range(100, 114)))
    check(p, " at length 0")
    for n in range(1, 14):
        for layer in (0, 1):
            grow(p, 0, layer, 1, 10 * n + layer)
        check(p, f" at length {n}")
        for layer in (0, 1):
            got = cache.page_table([0], layer, 1)
            want = model.page_table([0], layer, 1)
            assert_equal(f"page_table([0], {layer}, 1) indices", got[1].tolist(), want[1].tolist(), f"page_table([0], {layer}, 1) at length {n}")
            for start in range(n + 1):  # every span, so that `start` counts (the machines map 0 .. n-1)
                call = f"slot_mapping(0, {layer}, {start}, {n - start})"
                assert_equal(call, cache.slot_mapping(0, layer, start, n - start).tolist(), model.slot_mapping(0, layer, start, n - start).tolist(), call)
        if n % 4 == 0:
            last = cache.page_table([0], 0)[2].tolist()
            assert_equal("page_table([0], 0) last_page_len", last, [4], f"page_table([0], 0) at length {n}, a multiple of B = 4: B, not 0")


def test_layers_of_different_lengths_and_a_batch() -> None:
    """Each layer's pages from its own length (never the table's, never another layer's), in a batch of three:
    one sequence empty (no page, last_page_len 0), one a block ahead in layer 0."""
    p = pair(16, 4, 2, 1, 2, layer_windows=(None, 3))
    for s in (0, 1, 2):
        run(p, "add_seq", s)
    grow(p, 0, 0, 9, 1)
    grow(p, 0, 1, 3, 2)
    grow(p, 2, 1, 8, 3)
    check(p, "")
    cache, model = p
    for layer in (0, 1):
        got, want = cache.page_table([2, 1, 0], layer), model.page_table([2, 1, 0], layer)
        for name, g, w in zip(("indptr", "indices", "last_page_len"), got, want):
            assert_equal(f"page_table([2, 1, 0], {layer}) {name}", g.tolist(), w.tolist(), f"page_table([2, 1, 0], {layer})")


def test_forks_and_copy_on_write() -> None:
    """A fork shares every page; a write to the child's part-full block gives it a copy: its pages name the
    copy, the parent's the original, and both read back their own gathers."""
    p = pair(16, 4, 2, 2, 2, sliding_window=6)
    run(p, "add_seq", 0)
    for layer in (0, 1):
        grow(p, 0, layer, 6, layer)
    run(p, "fork", 0, 1)
    check(p, " after fork(0, 1)")
    grow(p, 1, 0, 1, 7)
    check(p, " after the child's copy on write")
    grow(p, 0, 1, 3, 8)
    check(p, " after the parent's copy on write")
    run(p, "fork", 1, 2)
    grow(p, 2, 1, 5, 9)
    check(p, " after a second fork and a window release")
    run(p, "free", 1)
    check(p, " after free(1)")


def test_a_windowed_hit_served_from_the_right() -> None:
    """A prompt's hit with a window: its first entries are -1 (released), its pages start at the first page of
    the window, and none of them is a released entry."""
    p = pair(16, 2, 2, 1, 2, prefix_caching=True, sliding_window=3)
    prompt = list(range(11))
    run(p, "add_seq", 0, prompt)
    for layer in (0, 1):
        grow(p, 0, layer, 10, layer)
    run(p, "free", 0)
    served = run(p, "add_seq", 1, prompt)
    cache, model = p
    assert_equal("the model's first table entry after the hit", model.block_table(1).tolist()[:1], [-1], f"add_seq(1, ...) served {served}")
    check(p, " after a windowed hit")
    grow(p, 1, 0, 1, 5)
    grow(p, 1, 1, 1, 6)
    check(p, " after the hit's first decode step")


def test_hybrid_groups() -> None:
    """Three groups (full attention, W = 3, W = 6): each layer's pages from its own group's table."""
    p = pair(24, 4, 3, 1, 2, prefix_caching=True, layer_windows=(None, 3, 6))
    run(p, "add_seq", 0, list(range(30)))
    for n, tokens in enumerate((5, 1, 1, 6, 1, 4)):
        for layer in range(3):
            grow(p, 0, layer, tokens, 3 * n + layer)
        check(p, f" after step {n}")
    run(p, "fork", 0, 1)
    grow(p, 1, 2, 2, 99)
    check(p, " after a fork and a write to the W = 6 layer")


# -- bad input: the contract's error, and nothing changes -------------------------------------------------

BAD: list[tuple[str, tuple[Any, ...], type[BaseException]]] = [
    ("page_table", ([0, 9], 0), KeyError),
    ("page_table", ([0, 0], 0), ValueError),
    ("page_table", ([9, 0, 0], 0), KeyError),  # the ids in order: the unknown one comes first
    ("page_table", ([0, 0, 9], 0), ValueError),
    ("page_table", (0, 0), TypeError),
    ("page_table", ([0, "1"], 0), TypeError),
    ("page_table", ([0, True], 0), TypeError),
    ("page_table", ([0, 9, "1"], 0), TypeError),  # every id's type before any is looked up
    ("page_table", ([0], 2), ValueError),
    ("page_table", ([9], 2, 3), KeyError),  # the ids, then the layer, then the page size
    ("page_table", ([0], 2, 3), ValueError),
    ("page_table", ([0], 0, 3), ValueError),
    ("page_table", ([0], 0, 0), ValueError),
    ("page_table", ([0], 0, -2), ValueError),
    ("page_table", ([0], 0, 8), ValueError),
    ("page_table", ([0], 0, True), TypeError),
    ("page_table", ([0], 0, "2"), TypeError),
    ("page_table", ([0], 0, 2.0), TypeError),
    ("slot_mapping", (0, 0, 0, 7), ValueError),
    ("slot_mapping", (0, 0, 6, 1), ValueError),
    ("slot_mapping", (0, 0, -1, 1), ValueError),
    ("slot_mapping", (0, 0, 0, -1), ValueError),
    ("slot_mapping", (0, 0, "0", 1), TypeError),
    ("slot_mapping", (0, 0, 0, 1.0), TypeError),
    ("slot_mapping", (0, 0, -1, "x"), ValueError),  # start wholly, then count
    ("slot_mapping", (9, 0, 0, 1), KeyError),
    ("slot_mapping", (9, 5, -1, 1), KeyError),  # the id, then the layer, then start and count
    ("slot_mapping", (0, 5, -1, 1), ValueError),
    ("kv_pages", (2,), ValueError),
    ("kv_pages", (0, 3), ValueError),
    ("kv_pages", (0, 0), ValueError),
    ("kv_pages", (0, False), TypeError),
    ("kv_pages", ("0",), TypeError),
]


@pytest.mark.parametrize(("call", "args", "error"), BAD, ids=[f"{c}{a!r}" for c, a, _ in BAD])
def test_bad_input_changes_nothing(call: str, args: tuple[Any, ...], error: type[BaseException]) -> None:
    """Each bad call raises the contract's error (the oracle's, pinned to the contract's row) and leaves every
    observable (stats, tables, lengths, gathers, page tables) as it was. Sequence 0 holds 6 positions, B = 4."""
    p = pair(8, 4, 2, 1, 2, layer_windows=(None, 3))
    run(p, "add_seq", 0)
    run(p, "add_seq", 1)
    for layer in (0, 1):
        grow(p, 0, layer, 6, layer)
    cache, model = p
    if harness.is_wire() and error is not TypeError and not has_wire_form(args):
        pytest.skip(skips.PYTHON_SURFACE)  # a driver gets integers only: the client refuses the call first (TypeError)
    before = harness.snapshot(cache, model.live(), model.n_layers)
    refused(p, error, call, *args)
    assert_equal("every observable after the refused call", harness.snapshot(cache, model.live(), model.n_layers), before, f"{call}{args!r}")
    assert_page_tables(cache, model, model.live(), f", after the refused {call}{args!r}")


def test_a_closed_cache_refuses_every_export() -> None:
    """After close(), each of the three raises ValueError, whatever its arguments."""
    p = pair(8, 4, 1, 1, 2)
    run(p, "add_seq", 0)
    run(p, "close")
    for call, args in (("page_table", ([0], 0)), ("page_table", ("x", 9, 0)), ("slot_mapping", (0, 0, 0, 0)), ("kv_pages", (0,)), ("kv_pages", (5, 3))):
        if has_wire_form(args) or not harness.is_wire():  # a driver is never sent 'x': the client refuses it first
            refused(p, ValueError, call, *args)


def has_wire_form(args: tuple[Any, ...]) -> bool:
    """Whether a driver can be sent these arguments: integers, and lists of integers (a batch's ids)."""
    return all(type(a) is int or (isinstance(a, list) and all(type(x) is int for x in a)) for a in args)


def test_exports_are_new_arrays() -> None:
    """page_table and slot_mapping return new arrays: changing them changes nothing the cache answers next."""
    p = pair(8, 4, 1, 1, 2)
    run(p, "add_seq", 0)
    grow(p, 0, 0, 5, 0)
    cache, model = p
    for size in page_sizes(model.block_size):
        first = cache.page_table([0], 0, size)
        for arr in first:
            arr[...] = -7
        again = cache.page_table([0], 0, size)
        for name, a, b in zip(("indptr", "indices", "last_page_len"), first, again):
            assert_equal(f"page_table([0], 0, {size}) {name} shares memory with the one before", np.shares_memory(a, b), False, "page_table")
    slots = cache.slot_mapping(0, 0, 0, 5)
    slots[...] = -7
    assert_page_tables(cache, model, [0], ", after changing the arrays it returned")
