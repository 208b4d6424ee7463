"""The bounded exhaustive explorer (wire/explore.py): every call sequence of a few calls on tiny pools.

`test_every_short_sequence_agrees` runs it against the implementation under test (--impl) at a small
depth, in a few seconds; `ci/gate --exhaustive` runs it to depth 6. The other tests check the explorer
itself, on broken implementations made here: it finds a shortest failing sequence, writes it as a
transcript that replays to the same difference, falls back to replaying when a deep copy is not
faithful, and compares tables up to a renaming of block ids under allocation=any.
"""

from __future__ import annotations

import copy
import importlib
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import harness
import paged
from assertions import assert_equal, assert_no_difference
from oracle import ModelKVCache
from wire import explore
from wire.transcript import parse, replay
from wire.server import Dispatcher

pytestmark = pytest.mark.exhaustive
EXAMPLES = Path(__file__).resolve().parent.parent / "ci" / "examples"
BASE = explore.GEOMETRIES[0]


@pytest.mark.parametrize(
    "geometry",
    [pytest.param(g, id=g.name, marks=[pytest.mark.needs("prefix_caching")] if g.prefix_caching else []) for g in explore.GEOMETRIES],
)
def test_every_short_sequence_agrees(geometry: explore.Geometry) -> None:
    results = explore.run(harness.impl_name(), 3, [geometry], profile=str(harness.profile()))
    failed = [r for r in results if r.failure is not None]
    assert_no_difference("\n".join(explore.report(results, harness.impl_name(), None)[1]) if failed else None)
    assert_equal("some geometry walked", bool(results), True, "explore.run")
    assert_equal("geometries whose walk stopped at its first state", [str(r.geometry) for r in results if r.states <= 1], [], "explore.run")


def example(name: str) -> Any:
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(EXAMPLES))


@pytest.mark.oracle
def test_the_first_failure_is_a_shortest_one_and_its_transcript_replays_it() -> None:
    broken = example("broken_copy_one_layer")
    result = explore.explore(explore.ModulePort(broken), BASE, 5)
    failure = result.failure
    assert failure is not None and failure.calls == 4, result
    # No sequence of 3 calls shows it: the walk to depth 3 passes.
    assert explore.explore(explore.ModulePort(broken), BASE, 3).failure is None
    assert [a[0] for a in failure.path] == ["add_seq", "append", "fork", "append"]
    assert explore.check_path(explore.ModulePort(broken), BASE, failure.path) == (4, failure.what)
    transcript = parse(failure.transcript().text())
    dispatcher = Dispatcher(broken, "broken")  # type: ignore[arg-type]
    dispatcher.handle("hello 1")
    mismatch = replay(transcript, lambda line: dispatcher.handle(line)[0])
    assert mismatch is not None and mismatch.request.startswith("gather"), mismatch
    ours = Dispatcher(paged, "paged")  # type: ignore[arg-type]
    ours.handle("hello 1")
    assert replay(transcript, lambda line: ours.handle(line)[0]) is None


class _Unfaithful(paged.PagedKVCache):
    """paged's cache with the default deep copy, which makes `_layers` arrays of their own, not views of the
    copied pools: a copy that writes through one and reads through the other."""

    __deepcopy__ = None


@pytest.mark.oracle
def test_an_unfaithful_deep_copy_is_replaced_by_replaying() -> None:
    module = SimpleNamespace(PagedKVCache=_Unfaithful, OutOfBlocks=paged.OutOfBlocks, __name__="unfaithful")
    port = explore.ModulePort(module)
    result = explore.explore(port, BASE, 4)
    assert result.failure is None and not port.can_copy and "not faithful" in result.note


@pytest.mark.oracle
def test_clone_model_shares_nothing_that_changes() -> None:
    g = BASE
    model = ModelKVCache(*g.sizes)
    for action in [("add_seq", 0), ("append", 0, 0, 3), ("fork", 0, 1)]:
        method, args = explore.concrete(action, model, g)
        getattr(model, method)(*args)
    key = explore.state_key(model, False)
    clone = explore.clone_model(model)
    assert explore.state_key(clone, False) == key
    method, args = explore.concrete(("append", 1, 0, 1), clone, g)
    clone.append(*args)
    clone.free(0)
    assert explore.state_key(model, False) == key != explore.state_key(clone, False)


class _Renamed(paged.PagedKVCache):
    """paged's cache seen through a renaming of block ids (b -> N-1-b): a port with another allocation order."""

    def block_table(self, seq_id: int) -> Any:
        return (self.num_blocks - 1 - super().block_table(seq_id)).astype(np.int32)


@pytest.mark.oracle
def test_allocation_any_compares_tables_up_to_a_renaming() -> None:
    module = SimpleNamespace(PagedKVCache=_Renamed, OutOfBlocks=paged.OutOfBlocks, __name__="renamed")
    exact = explore.explore(explore.ModulePort(module), BASE, 3)
    assert exact.failure is not None and "block_table" in exact.failure.what
    renamed = explore.explore(explore.ModulePort(module), BASE, 4, profile="allocation=any")
    assert renamed.failure is None
    # Canonical keys merge states that differ only by their block ids: never more states than exact ones.
    assert renamed.states <= explore.explore(explore.ModulePort(paged), BASE, 4).states


@pytest.mark.oracle
def test_the_renaming_checker() -> None:
    ok, carry = explore.renaming({0: [0, 1]}, {0: [5, 3]}, None, [], num_blocks=6)
    assert ok is None
    assert explore.renaming({0: [0, 1], 1: [0]}, {0: [5, 3], 1: [5]}, carry, [], num_blocks=6)[0] is None
    assert "should be 5" in (explore.renaming({1: [0]}, {1: [3]}, carry, [], num_blocks=6)[0] or "")  # block 0 is 5, not 3
    assert "already the block of" in (explore.renaming({1: [2]}, {1: [3]}, carry, [], num_blocks=6)[0] or "")  # 3 still holds block 1
    assert explore.renaming({1: [2]}, {1: [3]}, carry, [1], num_blocks=6)[0] is None  # once block 1 is released, 3 may be reused


@pytest.mark.oracle
def test_every_value_is_distinct_and_exact() -> None:
    g = explore.GEOMETRIES[1]
    seen = set()
    for seq in g.seq_ids:
        for layer in range(g.n_layers):
            k = explore.value(g, seq, layer, 0, 12)
            assert np.array_equal(k.astype(np.float64), np.round(k.astype(np.float64)))
            seen.update(k.ravel().tolist())
    assert len(seen) == len(g.seq_ids) * g.n_layers * 12 * g.n_kv_heads * g.d_head


@pytest.mark.oracle
def test_a_deep_copy_of_paged_is_faithful() -> None:
    for prefix in (False, True):
        cache = paged.PagedKVCache(3, 2, 2, 1, 1, prefix_caching=prefix)
        cache.add_seq(0, [1, 2, 3])
        one = np.ones((1, 2, 1))
        cache.append(0, 0, one, one)
        twin = copy.deepcopy(cache)
        twin.append(0, 1, 2 * one, one)
        twin.fork(0, 1)
        assert cache.seq_len(0, 1) == 0 and twin.seq_len(0, 1) == 2
        assert twin.gather(0, 1)[0].ravel().tolist() == [2.0, 2.0] and cache.gather(0, 1)[0].size == 0
        twin.free(0)
        twin.free(1)
        assert cache.block_table(0).tolist() == [0] and cache.stats()["used"] == 1 and twin.stats()["used"] == 0


@pytest.mark.oracle
def test_through_a_driver_the_same_failure_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver port (a cache per state by handle, pipelined requests) agrees with the module port."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", f"{EXAMPLES}:{root}")
    ours = explore.run(f"exec:{sys.executable} -m paged.driver", 3, [BASE, explore.GEOMETRIES[2]])
    assert [r.failure for r in ours] == [None, None] and ours[0].states == explore.explore(explore.ModulePort(paged), BASE, 3).states
    (broken,) = explore.run(f"exec:{sys.executable} -m paged.driver --impl broken_copy_one_layer", 5, [BASE])
    assert broken.failure is not None and broken.failure.calls == 4
    assert [a[0] for a in broken.failure.path] == ["add_seq", "append", "fork", "append"]


class _LiveIdAddedAgain(paged.PagedKVCache):
    """paged's cache, where adding a live id again starts it afresh instead of raising ValueError."""

    def add_seq(self, seq_id: int, tokens: Any = ()) -> int:
        if seq_id in [s for s in range(3) if self._live(s)]:
            self.free(seq_id)
        return super().add_seq(seq_id, tokens)

    def _live(self, s: int) -> bool:
        try:
            self.seq_len(s)
        except KeyError:
            return False
        return True


@pytest.mark.oracle
def test_a_wrong_error_kind_is_a_two_call_failure(tmp_path: Path) -> None:
    module = SimpleNamespace(PagedKVCache=_LiveIdAddedAgain, OutOfBlocks=paged.OutOfBlocks, __name__="live_again")
    result = explore.explore(explore.ModulePort(module), BASE, 4)
    assert result.failure is not None and result.failure.calls == 2
    assert result.failure.path == [("add_seq", 0), ("add_seq", 0)]
    assert result.failure.what == "add_seq(0) returned 0, but should have raised invalid_argument"
    ok, lines = explore.report([result], "live_again", str(tmp_path / "t.txt"))
    assert not ok and (tmp_path / "t.txt").exists()
    assert any("shortest failing sequence (2 calls" in line for line in lines)


class _ParentAfterChild(paged.PagedKVCache):
    """paged's cache, where fork checks the child before the parent (CONTRACT.md "Which error wins": the parent first)."""

    def fork(self, parent: int, child: int) -> None:
        if child in self._seqs:
            raise ValueError(f"sequence {child} is already live")
        super().fork(parent, child)


def test_two_faults_in_one_call_are_tried() -> None:
    """An unknown parent onto a live child must be unknown_sequence: the explorer sends that call, and a
    cache with the other order fails it after the one call that makes the child live."""
    module = SimpleNamespace(PagedKVCache=_ParentAfterChild, OutOfBlocks=paged.OutOfBlocks, __name__="parent_after_child")
    result = explore.explore(explore.ModulePort(module), BASE, 3)
    assert result.failure is not None and result.failure.calls == 2, result.failure
    (first, second) = result.failure.path
    assert first[0] == "add_seq" and second == ("fork", second[1], first[1]), result.failure.path
    assert "unknown_sequence" in result.failure.what, result.failure.what
