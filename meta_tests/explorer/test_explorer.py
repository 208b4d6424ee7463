"""The bounded exhaustive explorer (explorer/) itself, on the broken ports of mutants/ports (and, for the
copier, caches here that answer as paged but keep state of their own): it finds a shortest failing sequence (also one that goes back to a state seen before, and
one that only a block size that is not a power of two shows), claims no more than it walked, writes the
failure as a transcript that replays to the same difference (under the port's profile), copies a
module's caches field for field, and catches a copy that is not faithful. These test the explorer's
honesty, not a port: tests/test_exhaustive.py runs the explorer against the implementation under test.
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

import paged
import explorer
from explorer import oracle_side
from explorer.ports import UnfaithfulCopy, call_text
from oracle import ModelKVCache, state
from wire.server import Dispatcher
from wire.transcript import parse, replay
from oracle.profile import Profile, hint

pytestmark = pytest.mark.exhaustive
PORTS = Path(__file__).resolve().parents[2] / "mutants" / "ports"  # the broken ports
BASE = explorer.GEOMETRIES[0]


def example(name: str) -> Any:
    sys.path.insert(0, str(PORTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(PORTS))


@pytest.mark.oracle
def test_geometry_names_are_test_ids() -> None:
    names = [g.name for g in explorer.GEOMETRIES]
    assert names[0] == "N3-B2-L2-H1-D1" and "N2-B1-L1-H1-D1-prefix" in names
    assert len(set(names)) == len(names)
    assert any(g.block_size & (g.block_size - 1) for g in explorer.GEOMETRIES)  # a block size that is not a power of two


@pytest.mark.oracle
def test_a_window_the_port_ignores_is_found() -> None:
    """With --sliding-window, the oracle and the port are both made with the window: a cache that takes the
    keyword and ignores it (every block kept, gather of every position) fails within 2 calls (an append of
    B + 1 positions, then its gather); the windowed names and transcript say the window."""
    module = example("ignores_the_window")
    (g,) = explorer.windowed([BASE], 2)
    assert (g.name, g.needs, g.options) == ("N3-B2-L2-H1-D1-W2", frozenset({"sliding_window"}), {"sliding_window": 2})
    result = explorer.explore(explorer.ModulePort(module), g, 3)
    assert result.failure is not None and result.failure.calls == 2 and result.failure.shortest, result
    assert "sliding_window=2" in str(result.failure)
    transcript = parse(result.failure.transcript().text())
    assert transcript.steps[0][0] == "new 3 2 2 1 1 sliding_window=2" and transcript.requires == ["sliding_window"]
    assert explorer.explore(explorer.ModulePort(module), BASE, 3).failure is None, "without the window it is paged"


@pytest.mark.oracle
def test_a_window_the_port_does_not_announce_walks_nothing_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """--sliding-window on a port without the keyword: no geometry can be walked, so no pass (exit 2, the reason)."""
    (tmp_path / "no_window.py").write_text(
        "from paged import OutOfBlocks, PagedKVCache as Base\n\n\nclass PagedKVCache(Base):\n"
        "    def __init__(self, n, b, l, h, d, *, prefix_caching=False):\n"
        "        super().__init__(n, b, l, h, d, prefix_caching=prefix_caching)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert explorer.main(["--impl", "no_window", "--sliding-window", "2", "--depth", "2", "--quiet"]) == 2
    assert "nothing walked" in capsys.readouterr().out
    assert explorer.main(["--impl", "no_window", "--depth", "2", "--quiet", "--geometry", "1"]) == 0


@pytest.mark.oracle
def test_the_first_failure_is_a_shortest_one_and_its_transcript_replays_it() -> None:
    broken = example("broken_copy_one_layer")
    result = explorer.explore(explorer.ModulePort(broken), BASE, 5)
    failure = result.failure
    assert failure is not None and failure.calls == 4 and failure.shortest, result
    # No sequence of 3 calls shows it: the walk to depth 3 passes.
    assert explorer.explore(explorer.ModulePort(broken), BASE, 3).failure is None
    assert [a[0] for a in failure.path] == ["add_seq", "append", "fork", "append"]
    assert explorer.check_path(explorer.ModulePort(broken), BASE, failure.path) == (4, failure.what)
    assert failure.what.startswith("gather(") and ", but should be " in failure.what and failure.what.endswith("]"), failure.what
    transcript = parse(failure.transcript().text())
    dispatcher = Dispatcher(broken, "broken")  # type: ignore[arg-type]
    dispatcher.handle("hello 1")
    mismatch = replay(transcript, lambda line: dispatcher.handle(line)[0])
    assert mismatch is not None and mismatch.request.startswith("gather"), mismatch
    ours = Dispatcher(paged, "paged")  # type: ignore[arg-type]
    ours.handle("hello 1")
    assert replay(transcript, lambda line: ours.handle(line)[0]) is None


@pytest.mark.oracle
def test_a_stale_state_behind_a_state_seen_before_is_found_in_4_calls(tmp_path: Path) -> None:
    """After add_seq(0); free(0) the model is back at the start, but the stale-state cache is not: the walk
    keeps every path of up to 4 accepted calls, and fails it on the 4-call sequence (issue 26), whose
    transcript is those calls."""
    sys.path.insert(0, str(PORTS))
    try:
        results = explorer.run("stale_freed_id", 6)
        ok, lines = explorer.report(results, "stale_freed_id", str(tmp_path / "t.txt"))
    finally:
        sys.path.remove(str(PORTS))
    failure = next(r.failure for r in results if r.failure is not None)
    assert not ok and failure.geometry == BASE and failure.shortest
    assert failure.path == [("add_seq", 0), ("free", 0), ("add_seq", 0), ("append", 0, 0, 1)]
    assert failure.what.startswith("gather(0, 0) k[head=0, pos=0, dim=0]=0xbc00 (-1), but should be 0x3c00 (1)"), failure.what
    requests = [request.split(" ")[0] for request, _ in parse((tmp_path / "t.txt").read_text()).steps]
    assert requests[:5] == ["new", "add_seq", "free", "add_seq", "append"], requests
    assert any(line.strip().startswith("shortest failing sequence (4 calls") for line in lines), lines
    # No geometry claims a bound: the others stopped when this one failed.
    assert not any("every sequence of <=" in line or "through one path each" in line for line in lines), lines


@pytest.mark.oracle
def test_no_claim_past_what_was_walked() -> None:
    """With every path kept only to 3 calls, the stale-state cache's 4-call failure is merged away (its
    first calls lead back to states seen before) and the walk to 5 passes; it then claims every sequence
    of <= 3 accepted calls and every state within 5 through one path each, nothing of every sequence of
    4 or 5 calls, some of which fail."""
    stale = example("stale_freed_id")
    result = explorer.explore(explorer.ModulePort(stale), BASE, 5, tree_depth=3)
    assert result.failure is None
    text = explorer.summary([result])
    assert "every sequence of <= 3 calls the model accepts" in text and "reachable in <= 5 calls, through one path each" in text, text
    assert "every sequence of <= 4" not in text and "every sequence of <= 5" not in text, text
    assert explorer.check_path(explorer.ModulePort(stale), BASE, [("add_seq", 0), ("free", 0), ("add_seq", 0), ("append", 0, 0, 1)]) is not None


@pytest.mark.oracle
def test_a_slot_computed_by_mask_fails_on_the_block_size_of_three() -> None:
    """`p & (B - 1)` for `p % B` agrees with the model for B = 1 and 2; the B = 3 geometry fails it in 2 calls."""
    masked = example("slot_by_mask")
    powers = [g for g in explorer.GEOMETRIES if not g.prefix_caching and g.block_size in (1, 2)]
    for g in powers:
        assert explorer.explore(explorer.ModulePort(masked), g, 3).failure is None, g
    sys.path.insert(0, str(PORTS))
    try:
        results = explorer.run("slot_by_mask", 6)
    finally:
        sys.path.remove(str(PORTS))
    failure = next(r.failure for r in results if r.failure is not None)
    assert failure.geometry.block_size == 3 and failure.path == [("add_seq", 0), ("append", 0, 0, 2)], failure
    assert failure.what.startswith("gather(0, 0) k[head=0, pos=0, dim=0]="), failure.what


def _consecutive(table: list[int]) -> bool:
    return all(block == table[0] + i for i, block in enumerate(table))


class _RunFlags(paged.PagedKVCache):
    """paged's cache with a flag per sequence kept as paged once kept one for gather (`run`, issue 19):
    true while the table is one run of consecutive ids, computed when a table is made, cleared by a
    copy on write, never recomputed (False for a table that is a run is safe). State a copy must carry."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._runs: dict[int, bool] = {}

    def add_seq(self, seq_id: int, tokens: Any = ()) -> int:
        served = super().add_seq(seq_id, tokens)
        self._runs[seq_id] = _consecutive(self._groups[0].tables[seq_id])
        return served

    def fork(self, parent: int, child: int) -> None:
        super().fork(parent, child)
        self._runs[child] = self._runs[parent]

    def free(self, seq_id: int) -> None:
        super().free(seq_id)
        del self._runs[seq_id]

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        table = self._groups[0].tables.get(seq_id) if type(seq_id) is int and not self._closed else None
        before = list(table) if table is not None else []
        super().append(seq_id, layer, k, v)
        if table is not None:
            copied = table[: len(before)] != before
            self._runs[seq_id] = self.keeps(seq_id) or (self._runs[seq_id] and not copied and _consecutive(table))

    def keeps(self, seq_id: int) -> bool:
        return False


class _KeepsTheRunFlag(_RunFlags):
    """A `run` flag that, once set, no append clears (a bug of the planted mutant s32's kind)."""

    def keeps(self, seq_id: int) -> bool:
        return self._runs[seq_id]


def _recomputes_the_run_flag(cache: Any) -> Any:
    """An unfaithful copy: every field carried, but each sequence's `run` flag computed again from its
    table: a stale flag in the original is a right one in the copy."""
    twin = explorer.faithful_copy(cache)
    for sid in getattr(twin, "_seqs", {}):
        twin._runs[sid] = _consecutive(twin._groups[0].tables[sid])
    return twin


def _stale_run_path(g: explorer.Geometry) -> tuple[Any, list[tuple[str, tuple[Any, ...]]]]:
    """A _KeepsTheRunFlag cache whose sequence 1 has a stale run flag, and the calls that made it."""
    model = ModelKVCache(*g.sizes)
    cache = _KeepsTheRunFlag(*g.sizes)
    calls = []
    for action in [("add_seq", 0), ("append", 0, 0, 3), ("fork", 0, 1), ("append", 1, 0, 1)]:
        method, args = explorer.concrete(action, model, g)
        getattr(model, method)(*args)
        getattr(cache, method)(*args)
        calls.append((method, args))
    assert cache._runs[1] and not _consecutive(cache._groups[0].tables[1])
    return cache, calls


@pytest.mark.oracle
def test_an_unfaithful_copy_fails_its_check_against_a_replay() -> None:
    module = SimpleNamespace(PagedKVCache=_KeepsTheRunFlag, OutOfBlocks=paged.OutOfBlocks, __name__="keeps_the_run_flag")
    cache, calls = _stale_run_path(BASE)
    port = explorer.ModulePort(module, copier=explorer.each_copy(_recomputes_the_run_flag)).bound(BASE)
    with pytest.raises(UnfaithfulCopy, match=r"cache\._runs\[1\]=False, but should be True"):
        port.check(_recomputes_the_run_flag(cache), calls)
    port.check(explorer.faithful_copy(cache), calls)  # the faithful copy carries the stale flag as it is
    # In a walk the check fails loudly: _RunFlags keeps `run` False after a copy on write even when the new
    # table is one run (False is safe), which this copier makes True; checked on every copy, the walk
    # says so, and replays every state instead.
    flags = SimpleNamespace(PagedKVCache=_RunFlags, OutOfBlocks=paged.OutOfBlocks, __name__="run_flags")
    loud = explorer.ModulePort(flags, copier=explorer.each_copy(_recomputes_the_run_flag), check_every=1)
    result = explorer.explore(loud, explorer.GEOMETRIES[1], 5)
    assert result.failure is None and not loud.can_copy, result
    assert "=True, but should be False" in result.note and "on a fresh cache" in result.note, result.note


@pytest.mark.oracle
def test_a_plain_deep_copy_of_paged_is_caught_and_replayed_instead() -> None:
    """copy.deepcopy makes `_layers` arrays of their own, not views of the copied pools: the first copy's
    check names the field, and the walk replays every state instead (and passes)."""
    port = explorer.ModulePort(paged, copier=explorer.each_copy(copy.deepcopy))
    result = explorer.explore(port, BASE, 4)
    assert result.failure is None and not port.can_copy
    assert "_layers[0][0] owns its data, but should be a view" in result.note, result.note


@pytest.mark.oracle
def test_a_faithful_copy_of_paged_carries_every_field_and_shares_nothing() -> None:
    for prefix in (False, True):
        cache = paged.PagedKVCache(3, 2, 2, 1, 1, prefix_caching=prefix)
        cache.add_seq(0, [1, 2, 3])
        one = np.ones((1, 2, 1))
        cache.append(0, 0, one, one)
        twin = explorer.faithful_copy(cache)
        assert explorer.difference(twin, cache) is None
        twin.append(0, 1, 2 * one, one)
        twin.fork(0, 1)
        assert cache.seq_len(0, 1) == 0 and twin.seq_len(0, 1) == 2
        assert twin.gather(0, 1)[0].ravel().tolist() == [2.0, 2.0] and cache.gather(0, 1)[0].size == 0
        twin.free(0)
        twin.free(1)
        assert cache.block_table(0).tolist() == [0] and cache.stats()["used"] == 1 and twin.stats()["used"] == 0
        assert explorer.difference(twin, cache) is not None


@pytest.mark.oracle
def test_the_oracles_copy_shares_nothing_that_changes() -> None:
    g = BASE
    model = ModelKVCache(*g.sizes)
    for action in [("add_seq", 0), ("append", 0, 0, 3), ("fork", 0, 1)]:
        method, args = explorer.concrete(action, model, g)
        getattr(model, method)(*args)
    key = state.key(model, False)
    clone = state.copy(model)
    assert state.key(clone, False) == key
    method, args = explorer.concrete(("append", 1, 0, 1), clone, g)
    clone.append(*args)
    clone.free(0)
    assert state.key(model, False) == key != state.key(clone, False)


@pytest.mark.oracle
def test_allocation_any_compares_tables_up_to_a_renaming() -> None:
    module = example("renamed_ids")
    exact = explorer.explore(explorer.ModulePort(module), BASE, 3)
    assert exact.failure is not None and exact.failure.what.startswith("block_table(0)[0]=2, but should be 0 [block_table(0), after "), exact.failure
    renamed = explorer.explore(explorer.ModulePort(module), BASE, 4, profile=Profile(allocation="any"))
    assert renamed.failure is None
    # Canonical keys merge states that differ only by their block ids: never more states than exact ones.
    assert renamed.states <= explorer.explore(explorer.ModulePort(paged), BASE, 4).states


@pytest.mark.oracle
def test_also_renamed_checks_every_table_both_ways(tmp_path: Path) -> None:
    """--also-renamed: one walk under the default profile whose every table is checked id for id and up to a
    renaming. paged passes and the report says so; each half fails on its own port, the message naming its
    check: renamed_ids (b -> N-1-b: right under allocation=any) only id for id, compacted_ids up to a renaming,
    in as few calls as a walk under allocation=any fails it."""
    both = explorer.explore(explorer.ModulePort(paged), BASE, 3, also_renamed=True)
    assert both.failure is None and both.also_renamed and not both.canonical
    assert "every table also checked up to a renaming of block ids (allocation=any's check), each time the tables are checked" in explorer.guarantee(both)
    assert not any("renaming" in line for line in explorer.guarantee(explorer.explore(explorer.ModulePort(paged), BASE, 3)))
    exact_only = explorer.explore(explorer.ModulePort(example("renamed_ids")), BASE, 4, also_renamed=True)
    assert exact_only.failure is not None and exact_only.failure.calls == 2, exact_only
    assert exact_only.failure.what.startswith("block_table(0)[0]=2, but should be 0 [block_table(0), after "), exact_only.failure.what
    assert exact_only.failure.what.endswith(f"({hint(Profile())})"), exact_only.failure.what
    compacted = example("compacted_ids")
    g = explorer.GEOMETRIES[1]  # a pool of 2: a hole below a held block in 5 calls
    renamed = explorer.explore(explorer.ModulePort(compacted), g, 5, also_renamed=True)
    under_any = explorer.explore(explorer.ModulePort(compacted), g, 5, profile=Profile(allocation="any"))
    assert renamed.failure is not None and under_any.failure is not None, (renamed, under_any)
    assert renamed.failure.calls == under_any.failure.calls == 5 and renamed.failure.shortest, (renamed.failure, under_any.failure)
    assert renamed.failure.path[-1] == ("free", 0) and ", but should be " in renamed.failure.what, renamed.failure
    assert renamed.failure.what.endswith(f"({hint(Profile(allocation='any'))})"), renamed.failure.what
    # That sequence fails under allocation=any alone, and id for id alone.
    for profile in (Profile(allocation="any"), Profile()):
        assert explorer.check_path(explorer.ModulePort(compacted), g, renamed.failure.path, profile) is not None, profile


class _Recording(explorer.ModulePort):
    """paged, each call a walk makes from a state recorded by its path (`made`), and the paths it keeps (`kept`)."""

    def __init__(self) -> None:
        super().__init__(paged)
        self.made: set[tuple[str, ...]] = set()
        self.kept: set[tuple[str, ...]] = set()

    def succeeded(self, cache: Any, path: Any, items: Any, own: bool = True) -> Any:
        here = tuple(call_text(method, args) for method, args in path)
        for item in items:
            self.made.add((*here, call_text(item.method, item.args)))
            if item.keep:
                self.kept.add((*here, call_text(item.method, item.args)))
        return super().succeeded(cache, path, items, own)


@pytest.mark.oracle
@pytest.mark.parametrize("g, depth", [(explorer.EVERY_GEOMETRY[i], depth) for i, depth in ((2, 6), (3, 4), (15, 6))], ids=lambda x: getattr(x, "name", str(x)))
def test_also_renamed_checks_all_a_walk_under_allocation_any_checks(g: explorer.Geometry, depth: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Why one walk is enough: the oracle is the same under both allocations, and the first path into a new
    state up to a renaming is the first into a new exact state. So the walk under the default profile with
    also_renamed makes every call, keeps every state and makes every check up to a renaming (the same tables,
    the same renaming carried) that a walk under allocation=any makes, and more: its states are exact ones."""
    checks: list[str] = []

    def recorded(want: Any, got: Any, carry: Any, released: Any, *, num_blocks: int) -> Any:
        checks.append(repr((sorted(want.items(), key=str), sorted(got.items(), key=str), carry and sorted(carry.bound().items()), list(released))))
        return explorer.tables_up_to_renaming(want, got, carry, released, num_blocks=num_blocks)

    monkeypatch.setattr(oracle_side, "tables_up_to_renaming", recorded)
    walked = {}
    for name, options in (("any", {"profile": Profile(allocation="any")}), ("both", {"also_renamed": True})):
        port, checks[:] = _Recording(), []
        assert explorer.explore(port, g, depth, **options).failure is None
        walked[name] = (port.made, port.kept, set(checks))
    assert [a <= b for a, b in zip(walked["any"], walked["both"])] == [True, True, True]
    assert len(walked["any"][0]) < len(walked["both"][0])  # states that differ only by their ids: each reached


@pytest.mark.oracle
def test_also_renamed_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m explorer --also-renamed` says what it checked; with a profile whose ids are names already it is
    a usage error, and nothing is walked."""
    assert explorer.main(["--also-renamed", "--depth", "2", "--geometry", "0", "--quiet"]) == 0
    assert "  every table also checked up to a renaming of block ids (allocation=any's check)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        explorer.main(["--also-renamed", "--profile", "allocation=any", "--depth", "2"])
    assert exc.value.code == 2
    out = capsys.readouterr()
    assert "--also-renamed: the profile allocation=any already compares tables up to a renaming" in out.err and "agrees" not in out.out, out


@pytest.mark.oracle
def test_the_replay_under_allocation_any_blames_the_data_not_the_ids(tmp_path: Path) -> None:
    """A port that declared allocation=any and answers its ids legally: the replay of its failure names the
    gather that differs, never the allocation order (issue 29)."""
    sys.path.insert(0, str(PORTS))
    try:
        results = explorer.run("renamed_and_stale", 4, [BASE], profile=Profile(allocation="any"))
        ok, lines = explorer.report(results, "renamed_and_stale", str(tmp_path / "t.txt"))
    finally:
        sys.path.remove(str(PORTS))
    text = "\n".join(lines)
    assert not ok and "lowest-free" not in text and "allocation=any" not in text.split("what differs", 1)[1], text
    assert "request " in text and "(gather " in text and "k[head=0, pos=0, dim=0]=" in text, text


@pytest.mark.oracle
def test_the_renaming_checker() -> None:
    ok, carry = explorer.tables_up_to_renaming({0: [0, 1]}, {0: [5, 3]}, None, [], num_blocks=6)
    assert ok is None
    assert explorer.tables_up_to_renaming({0: [0, 1], 1: [0]}, {0: [5, 3], 1: [5]}, carry, [], num_blocks=6)[0] is None
    assert "should be 5" in (explorer.tables_up_to_renaming({1: [0]}, {1: [3]}, carry, [], num_blocks=6)[0] or "")  # block 0 is 5, not 3
    assert "already the block of" in (explorer.tables_up_to_renaming({1: [2]}, {1: [3]}, carry, [], num_blocks=6)[0] or "")  # 3 still holds block 1
    assert explorer.tables_up_to_renaming({1: [2]}, {1: [3]}, carry, [1], num_blocks=6)[0] is None  # once block 1 is released, 3 may be reused


@pytest.mark.oracle
def test_every_value_is_distinct_and_exact() -> None:
    g = explorer.GEOMETRIES[1]
    seen = set()
    for seq in g.seq_ids:
        for layer in range(g.n_layers):
            k = explorer.value(g, seq, layer, 0, 12)
            assert np.array_equal(k.astype(np.float64), np.round(k.astype(np.float64)))
            seen.update(k.ravel().tolist())
    assert len(seen) == len(g.seq_ids) * g.n_layers * 12 * g.n_kv_heads * g.d_head


@pytest.mark.oracle
def test_through_a_driver_the_same_failure_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver port (a cache per state by handle, pipelined requests) agrees with the module port."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", f"{PORTS}:{root}")
    prefix = next(g for g in explorer.GEOMETRIES if g.prefix_caching)
    ours = explorer.run(f"exec:{sys.executable} -m wire.driver", 3, [BASE, prefix])
    module = explorer.explore(explorer.ModulePort(paged), BASE, 3)
    assert [r.failure for r in ours] == [None, None] and (ours[0].states, ours[0].sequences) == (module.states, module.sequences)
    (broken,) = explorer.run(f"exec:{sys.executable} -m wire.driver --impl broken_copy_one_layer", 5, [BASE])
    assert broken.failure is not None and broken.failure.calls == 4
    assert [a[0] for a in broken.failure.path] == ["add_seq", "append", "fork", "append"]
    (stale,) = explorer.run(f"exec:{sys.executable} -m wire.driver --impl stale_freed_id", 4, [BASE])
    assert stale.failure is not None and stale.failure.path == [("add_seq", 0), ("free", 0), ("add_seq", 0), ("append", 0, 0, 1)]


@pytest.mark.oracle
def test_a_wrong_error_kind_is_a_two_call_failure(tmp_path: Path) -> None:
    result = explorer.explore(explorer.ModulePort(example("live_id_added_again")), BASE, 4)
    assert result.failure is not None and result.failure.calls == 2
    assert result.failure.path == [("add_seq", 0), ("add_seq", 0)]
    assert result.failure.what == "answer=ok 0, but should be err invalid_argument [add_seq(0)]"
    ok, lines = explorer.report([result], "live_id_added_again", str(tmp_path / "t.txt"))
    assert not ok and (tmp_path / "t.txt").exists()
    assert any("failing sequence (2 calls" in line for line in lines)


def test_two_faults_in_one_call_are_tried() -> None:
    """An unknown parent onto a live child must be unknown_sequence: the explorer sends that call, and a
    cache with the other order fails it after the one call that makes the child live."""
    result = explorer.explore(explorer.ModulePort(example("parent_after_child")), BASE, 3)
    assert result.failure is not None and result.failure.calls == 2, result.failure
    (first, second) = result.failure.path
    assert first[0] == "add_seq" and second == ("fork", second[1], first[1]), result.failure.path
    assert "unknown_sequence" in result.failure.what, result.failure.what
