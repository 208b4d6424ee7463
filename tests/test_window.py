"""Sliding window (CONTRACT.md "Sliding window (opt-in)"), model-checked like the rest.

`TestWindowMachine` and `TestWindowPrefixMachine` run the cache and prefix machines with a
window of 2 to 9 positions (10 to 16 one example in five) on blocks of 1 to 4 (`machines.window`): blocks are let go within a
few appends, layers lag, forks share tables with released entries, prompts are served from
their last blocks. The properties below pin what the machines cannot state alone: the window a
gather returns is the end of what a cache without a window gathers, and the constructor checks
its new argument in the contract's order.

Skipped for an implementation without the capability (a driver that does not announce
`sliding_window`): the contract makes it opt-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests import harness
from tests import skips
from tests.assertions import assert_equal, assert_raises, assert_same_bits
from tests.machines import SETTINGS, floored
from tests.machines.window import WINDOWS, WindowMachine, WindowPrefixMachine
from tests.programs import GEOMETRY, OP, both, run, run_program

pytestmark = pytest.mark.needs("sliding_window")

TestWindowMachine = pytest.mark.stateful(floored(WindowMachine))
TestWindowMachine.settings = SETTINGS
TestWindowPrefixMachine = pytest.mark.stateful(floored(WindowPrefixMachine))
TestWindowPrefixMachine.settings = SETTINGS


@given(geometry=GEOMETRY, window=WINDOWS, ops=st.lists(OP, max_size=30))
def test_the_window_is_the_end_of_what_a_cache_without_one_gathers(
    geometry: tuple[int, int, int, int], window: int, ops: list[tuple[Any, ...]]
) -> None:
    """The same program on a cache with the window and one without (each in step with the oracle), pools large
    enough that neither runs out: every gather of the windowed one is the last W - 1 positions (all of them, when
    fewer) of the oracle's gather without the window, and its seq_len is the same."""
    harness.begin_example()
    pool = 3 + sum(op[1][1] for op in ops if op[0] == "append") + 2 * len(ops)  # a block per position and copy, at most
    windowed, model_w = harness.impl().PagedKVCache(pool, *geometry, sliding_window=window), harness.model(pool, *geometry, sliding_window=window)
    full, model_f = harness.impl().PagedKVCache(pool, *geometry), harness.model(pool, *geometry)
    live = run_program(windowed, model_w, ops, geometry)
    assert_equal("live sequences", run_program(full, model_f, ops, geometry), live, "the same program without the window")
    harness.assert_matches_model(windowed, model_w)
    for s in live:
        for layer in range(geometry[1]):
            n = model_f.seq_len(s, layer)
            assert_equal(f"seq_len({s}, {layer})", windowed.seq_len(s, layer), n, "the same program without the window")
            for name, got, every in zip("kv", windowed.gather(s, layer), model_f.gather(s, layer)):
                want = every[:, max(0, n - window + 1) :]
                assert_same_bits(f"gather({s}, {layer}) {name}", got, want, f"the last {window - 1} positions gathered without the window")
    windowed.close()
    full.close()


def chunk(tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """K and V [1, tokens, 1]: K counts up from 1, V down from -1 (each position its own values)."""
    k = np.arange(1, tokens + 1, dtype=np.float16).reshape(1, tokens, 1)
    return k, -k


@pytest.mark.parametrize(
    "options",
    [
        {"sliding_window": 1}, {"sliding_window": 0}, {"sliding_window": -3}, {"sliding_window": 2**31},
        {"sliding_window": True}, {"sliding_window": 2.0}, {"sliding_window": "3"},
        {"sliding_window": 1, "prefix_caching": "yes"},  # prefix_caching is checked first: TypeError
    ],
    ids=["1", "0", "negative", "2^31", "bool", "float", "str", "after-prefix-caching"],
)
def test_bad_windows_raise_the_contracts_errors(options: dict[str, Any]) -> None:
    """A window outside 2 .. 2^31 - 1 is ValueError, a non-integer (bool included) TypeError, after prefix_caching's
    check; the error is the oracle's. A driver gets only integers, so the type rows are the Python surface's."""
    try:
        harness.model(4, 2, 1, 1, 1, **options)
    except (TypeError, ValueError) as exc:
        want = type(exc)
    else:
        raise AssertionError(f"the model accepted PagedKVCache(4, 2, 1, 1, 1, **{options!r}), but should refuse it [the contract]")
    if harness.is_wire() and want is TypeError:
        pytest.skip(skips.WINDOW_TYPE)
    assert_raises(harness.expected_error(want()), f"PagedKVCache(4, 2, 1, 1, 1, **{options!r})", lambda: harness.impl().PagedKVCache(4, 2, 1, 1, 1, **options))


@pytest.mark.python_surface
def test_a_numpy_integer_window_is_that_window() -> None:
    """W may be a NumPy integer, as every size may (CONTRACT.md "Sliding window"): np.int64(2) keeps one position, as
    2 does; np.bool_ is TypeError, as bool is. The same calls on the oracle with the Python int."""
    pair = (harness.impl().PagedKVCache(4, 1, 1, 1, 1, sliding_window=np.int64(2)), harness.model(4, 1, 1, 1, 1, sliding_window=2))
    run(pair, "add_seq", 0)
    run(pair, "append", 0, 0, *chunk(3))
    harness.assert_matches_model(*pair)
    assert_raises(harness.expected_error(TypeError()), "PagedKVCache(4, 1, 1, 1, 1, sliding_window=np.bool_(True))",
                  lambda: harness.impl().PagedKVCache(4, 1, 1, 1, 1, sliding_window=np.bool_(True)))


def test_a_window_as_large_as_allowed_releases_nothing() -> None:
    """W = 2^31 - 1 is accepted, and short sequences keep every block, as without the window."""
    pair = (harness.impl().PagedKVCache(4, 2, 1, 1, 1, sliding_window=2**31 - 1), harness.model(4, 2, 1, 1, 1, sliding_window=2**31 - 1))
    run(pair, "add_seq", 0)
    ones = np.ones((1, 5, 1), np.float16)
    run(pair, "append", 0, 0, ones, ones)
    harness.assert_matches_model(*pair)


def test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit() -> None:
    """B = 2, W = 5 (the window's 4 positions are two whole blocks), prefix caching on, each step on the oracle in
    step and every observable compared after it: one append of 9 positions registers four blocks and releases two
    of them, which become cached, the later index first; a prompt of 7 other tokens evicts the one cached longest
    ago; a prompt sharing the first 8 tokens is then served its last two blocks (entries 0 and 1 are -1), and its
    append evicts again."""
    pair = both(harness.impl(), 8, 2, 1, 1, 1, prefix_caching=True, sliding_window=5)
    cache, model = pair
    steps: list[tuple[str, tuple[Any, ...]]] = [
        ("add_seq", (0, list(range(1, 10)))),
        ("append", (0, 0, *chunk(9))),
        ("add_seq", (1, [7] * 7)),
        ("append", (1, 0, *chunk(7))),
        ("add_seq", (2, list(range(1, 11)))),
        ("append", (2, 0, *chunk(2))),
    ]
    for name, args in steps:
        run(pair, name, *args)
        harness.assert_matches_model(cache, model, when=f", after {name}{args[:2]}")
    # The scenario reached what it is for (the oracle's state, not the cache's):
    if harness.profile().registration == "dense":
        assert_equal("the oracle's evictions", model.evictions, 2, "the scenario: the sevens evict one block, the last append another")
    else:  # replay-tail (CONTRACT.md, Profiles): block 0 of the first prompt is never registered, so it comes back free
        assert_equal("the oracle's evictions", model.evictions, 1, "the scenario under replay-tail: the sevens take free blocks, the last append evicts")
    assert_equal("the oracle's table of 2 starts", model.tables[2][:2], [-1, -1], "the scenario: a hit skipping two blocks")
    cache.close()
