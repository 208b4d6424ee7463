"""The machines' measured coverage (`machines.observe`, `machines.coverage`): what counts, and that the floors can fail.

Each behaviour is checked on hand-driven oracle sessions (reached exactly when the model did
it), and the floor check on a machine with rules taken away: with every rule that forks
removed from PrefixMachine, a quick derandomised run in which the intact machine reaches fork,
copy on write and the chain reaches none of them, and the floor check fails naming them. Run on the oracle as the implementation
(as test_reports does), so these test the suite alone and pass or fail the same for every
implementation under test.
"""

from __future__ import annotations

import sys
import types
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests import harness
import oracle.as_impl
from tests.machines import PrefixMachine, coverage
from tests.machines.observe import BEHAVIOURS, Observer
from oracle import ModelKVCache


def drive(model: ModelKVCache, watch: Observer, name: str, *args: Any) -> Any:
    """One call on the model, watched as a machine watches it; its result or its exception."""
    seen = watch.before(model, name, args)
    try:
        out = getattr(model, name)(*args)
    except Exception as exc:  # noqa: BLE001 - the watcher sees the model's errors too
        watch.after(model, seen, exc)
        return exc
    watch.after(model, seen, out)
    return out


def chunk(tokens: int) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(tokens, dtype=np.float16).reshape(1, tokens, 1)
    return k, -k


def test_fork_then_a_write_into_the_shared_partial_block_is_a_copy_on_write() -> None:
    model, watch = ModelKVCache(8, 2, 1, 1, 1), Observer()
    drive(model, watch, "add_seq", 0)
    drive(model, watch, "append", 0, 0, *chunk(1))
    drive(model, watch, "append", 0, 0, *chunk(2))  # fills block 0, starts block 1: no copy, nothing shared
    assert watch.reached == set()
    drive(model, watch, "fork", 0, 1)
    assert watch.reached == {"fork"}
    drive(model, watch, "append", 1, 0, *chunk(1))
    assert watch.reached == {"fork", "copy on write"}  # no hit: not the chain, nor all three together


def test_out_of_blocks_and_layers_diverging() -> None:
    model, watch = ModelKVCache(1, 1, 2, 1, 1), Observer()
    drive(model, watch, "add_seq", 0)
    drive(model, watch, "append", 0, 0, *chunk(1))
    assert watch.reached == set()
    watch.stepped(model)
    assert watch.reached == {"layers diverging"}
    assert isinstance(drive(model, watch, "append", 0, 1, *chunk(2)), oracle.OutOfBlocks)
    assert watch.reached == {"layers diverging", "OutOfBlocks"}
    other = Observer()
    drive(model, other, "append", 0, 1, *chunk(1))
    other.stepped(model)
    assert other.reached == set()  # both layers at 1


def test_hit_fork_copy_filled_duplicate_key_hit_and_eviction() -> None:
    """A prompt written, served to a second sequence, which forks; the fork's copy of the shared partial block
    fills (the chain), the second's own block fills under the same key (a duplicate), a third prompt is served
    that key; then a prompt needing every block evicts the cached ones."""
    model, watch = ModelKVCache(6, 2, 1, 1, 1, prefix_caching=True), Observer()
    steps: list[tuple[str, tuple[Any, ...], set[str]]] = [
        ("add_seq", (0, [1, 2, 3]), set()),
        ("append", (0, 0, *chunk(3)), set()),
        ("add_seq", (1, [1, 2, 3]), {"hit"}),
        ("append", (1, 0, *chunk(1)), set()),
        ("fork", (1, 2), {"fork"}),
        ("extend", (2, [4]), set()),
        ("append", (2, 0, *chunk(1)), {"copy on write", "copy on write, fork and hit", "hit, fork, copy filled"}),
        ("extend", (1, [4]), set()),
        ("append", (1, 0, *chunk(1)), set()),  # its own block fills under the key (1, 2, 3, 4): a duplicate
        ("add_seq", (3, [1, 2, 3, 4, 5]), {"hit on a duplicated key"}),
        ("free", (0,), set()),
        ("free", (1,), set()),
        ("free", (2,), set()),
        ("free", (3,), set()),
        ("add_seq", (4, [7] * 12), set()),
        ("append", (4, 0, *chunk(12)), {"eviction"}),
    ]
    for name, args, new in steps:
        before = set(watch.reached)
        drive(model, watch, name, *args)
        assert watch.reached - before == new, f"{name}{args[:2]}: reached {watch.reached - before}, expected {new}"
    assert watch.reached == set(BEHAVIOURS) - {"OutOfBlocks", "layers diverging", "window release", "windowed hit", "release beside a held entry", "hit cut by a group"}


def test_a_release_beside_a_held_entry_and_a_hit_cut_by_a_group() -> None:
    """A hybrid model (a full-attention layer, a layer of W = 2): the windowed layer lets go of its first block while the
    full-attention table holds its own; then a prompt whose keys the full-attention group has for 2 blocks and the
    window group for 1 is served 1 block, cut by the window group."""
    model, watch = ModelKVCache(8, 2, 2, 1, 1, prefix_caching=True, layer_windows=(None, 2)), Observer()
    steps: list[tuple[str, tuple[Any, ...], set[str]]] = [
        ("add_seq", (0, [1, 2, 3, 4, 5]), set()),
        ("append", (0, 0, *chunk(5)), set()),
        ("append", (0, 1, *chunk(2)), set()),
        ("free", (0,), set()),
        ("add_seq", (1, [1, 2, 3, 4, 5]), {"hit", "hit cut by a group"}),
        ("append", (1, 0, *chunk(3)), set()),
        ("append", (1, 1, *chunk(3)), {"window release", "release beside a held entry"}),
    ]
    for name, args, new in steps:
        before = set(watch.reached)
        drive(model, watch, name, *args)
        assert watch.reached - before == new, f"{name}{args[:2]}: reached {watch.reached - before}, expected {new}"


def test_a_window_release_and_a_windowed_hit() -> None:
    """W = 3, B = 2: the append to 4 positions lets block 0 go (its entry -1); a later prompt's hit needs only the
    blocks its window reaches, so it skips the first (and a full-attention cache never reaches either)."""
    model, watch = ModelKVCache(8, 2, 1, 1, 1, prefix_caching=True, sliding_window=3), Observer()
    drive(model, watch, "add_seq", 0, [1, 2, 3, 4, 5])
    drive(model, watch, "append", 0, 0, *chunk(3))
    assert watch.reached == set()
    drive(model, watch, "append", 0, 0, *chunk(1))
    assert watch.reached == {"window release"}
    drive(model, watch, "add_seq", 1, [9, 9, 3, 4, 5])  # block 1's key is (1, 2, 3, 4): no hit
    drive(model, watch, "add_seq", 2, [1, 2, 3, 4, 6])
    assert model.tables[2][0] == -1
    assert watch.reached == {"window release", "hit", "windowed hit"}


def test_a_copy_that_fills_is_not_the_chain_without_a_hit_before_the_fork() -> None:
    model, watch = ModelKVCache(6, 2, 1, 1, 1, prefix_caching=True), Observer()
    drive(model, watch, "add_seq", 0, [5, 6, 7])
    drive(model, watch, "append", 0, 0, *chunk(3))
    drive(model, watch, "fork", 0, 1)
    drive(model, watch, "extend", 1, [8])
    drive(model, watch, "append", 1, 0, *chunk(1))
    drive(model, watch, "add_seq", 2, [5, 6, 7])  # a hit, after the copy
    assert watch.reached == {"fork", "copy on write", "hit", "copy on write, fork and hit"}


class PrefixMachineWithoutForks(PrefixMachine):
    """PrefixMachine with every rule that forks taken away."""

    fork = fork_and_decode = sampled_request = beam_search = None  # type: ignore[assignment]


QUICK = settings(max_examples=20, stateful_step_count=30, derandomize=True, database=None, phases=[Phase.generate], deadline=None)
FORKING = ("fork", "copy on write", "hit, fork, copy filled", "copy on write, fork and hit")


def quick_tally(machine: Any, monkeypatch: pytest.MonkeyPatch) -> coverage.Tally:
    """The machine's coverage over QUICK's examples, the oracle (under the profile under test) as the implementation."""
    model = oracle.as_impl.under(harness.profile())
    module = types.ModuleType("_oracle_for_coverage")
    module.PagedKVCache, module.OutOfBlocks, module.PROFILE = model.PagedKVCache, model.OutOfBlocks, model.PROFILE  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(harness, "_run", harness.Run(replace(harness.config(), impl=module.__name__)))
    with coverage.counting() as tally:
        run_state_machine_as_test(machine, settings=QUICK)
    return tally


def test_the_floors_fail_when_the_rules_that_fork_are_taken_away(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the same quick run, the intact PrefixMachine reaches fork, copy on write and the chain (its test, under
    ci, shows them above their floors); without its forking rules it reaches none of them, and the floor check
    fails naming each."""
    intact = quick_tally(PrefixMachine, monkeypatch)
    assert all(intact.reached[b] for b in FORKING), coverage.table("PrefixMachine", intact, {})
    stripped = quick_tally(PrefixMachineWithoutForks, monkeypatch)
    floors = coverage.FLOORS["PrefixMachine"]
    failure = coverage.verdict("PrefixMachineWithoutForks", stripped, floors)
    assert failure is not None and set(FORKING) <= set(coverage.shortfalls(floors, stripped)), failure
    assert not any(stripped.reached[b] for b in FORKING), failure
    assert failure.startswith(f"coverage of PrefixMachineWithoutForks below its floor for {', '.join(coverage.shortfalls(floors, stripped))}")
