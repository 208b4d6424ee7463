"""--xfails hides nothing (issue 52): an entry matches only when every failure its test reports is the listed
one, names the observable with both its values, and names a test the run collects.

The group's case is a real Hypothesis run, in a pytest of its own with the suite's plugins: a tiny @given
test that fails the listed way alone (an expected failure), or the listed way and a second way, which
Hypothesis reports as one ExceptionGroup (a failure: the second bug is not hidden). Marked `gate` (our
tooling, in subprocesses).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testkit import xfails
from tests import assertions, harness

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup  # Hypothesis's dependency before 3.11

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_gate does
    pytest.skip("the suite's own tests of --xfails: run with --impl=paged", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
LISTED = "a()=1, but should be 2"
OTHER = "b()=3, but should be 4"

# One test, failing LISTED on odd numbers and, with TWO_WAYS=1, OTHER on even ones: two distinct failures
# (two raising lines), which Hypothesis reports together as an ExceptionGroup (found while shrinking: the ci
# profile's phases, as the suite's own runs and the gate's second pass have them).
TWO_WAYS = f'''
import os
from hypothesis import Phase, given, settings, strategies as st

@settings(database=None, derandomize=True, max_examples=50, phases=[Phase.generate, Phase.shrink])
@given(st.integers(min_value=1, max_value=100))
def test_two_ways(n):
    if n % 2:
        raise AssertionError("{LISTED} [a()]")
    if os.environ["TWO_WAYS"] == "1":
        raise AssertionError("{OTHER} [b()]")
'''
NODE = "test_two_ways.py::test_two_ways"


def run_tiny(tmp_path: Path, listed: str, two_ways: bool, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, str]]]:
    """pytest, with the suite's plugins and `listed` as the --xfails file, on TWO_WAYS in `tmp_path`; its run and outcomes."""
    (tmp_path / "conftest.py").write_text("from tests.plugins import PLUGINS\n\npytest_plugins = PLUGINS\n")
    (tmp_path / "test_two_ways.py").write_text(TWO_WAYS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "xfails.txt").write_text(listed)
    outcomes = tmp_path / "outcomes.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TWO_WAYS="1" if two_ways else "0", HYPOTHESIS_PROFILE="ci")
    env.pop("PAGED_PROFILE", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"), f"--rootdir={tmp_path}",
               "--impl=paged", f"--xfails={tmp_path / 'xfails.txt'}", f"--outcomes={outcomes}", *args]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return run, json.loads(outcomes.read_text())["tests"] if outcomes.exists() else {}


def test_a_hypothesis_failure_group_of_the_listed_failure_and_another_fails(tmp_path: Path) -> None:
    listed = f"{NODE}  # expects: {LISTED}  # the listed bug\n"
    run, outcomes = run_tiny(tmp_path, listed, False, "-n", "0")
    assert run.returncode == 0 and outcomes[NODE]["outcome"] == "xfailed", run.stdout[-3000:]  # the listed way alone
    run, outcomes = run_tiny(tmp_path, listed, True, "-n", "0")
    assert run.returncode == 1, run.stdout[-3000:]
    assert outcomes[NODE]["outcome"] == "failed", outcomes
    detail = outcomes[NODE]["detail"]
    assert detail.startswith(f"{tmp_path / 'xfails.txt'}:1 expects {LISTED!r}; the failure is:\n"), detail
    assert "ExceptionGroup" in detail and LISTED in detail and OTHER in detail, detail  # Hypothesis's group, both members


def test_every_member_of_a_group_must_be_the_listed_failure() -> None:
    entry = xfails.Entry("t.py::t", LISTED, "why", "x.txt:1")
    same = ExceptionGroup("two", [AssertionError(f"{LISTED} [a()]"), AssertionError(f"{LISTED} [a() again]")])
    nested = ExceptionGroup("outer", [AssertionError(f"{LISTED} [a()]"), ExceptionGroup("inner", [AssertionError(f"{OTHER} [b()]")])])
    assert entry.matches(AssertionError(f"{LISTED} [a()]"))
    assert entry.matches(same)
    assert not entry.matches(ExceptionGroup("two", [AssertionError(f"{LISTED} [a()]"), KeyError(3)]))
    assert not entry.matches(nested)
    assert xfails.failures(nested) == [f"AssertionError: {LISTED} [a()]", f"AssertionError: {OTHER} [b()]"]


@pytest.mark.parametrize(
    "expects, why",
    [
        ("stats()['free']=", "names no observable with its values"),  # a bare observable: any free count
        ("stats()['free']=3", "names no observable with its values"),  # no value it should be
        ("3, 4, 60])=0, but should be 12", "names no observable with its values"),  # the tail of a call
        ("add_seq(1, [3, 4, 60]))=0, but should be 12", "is not a whole observable"),
        ("AssertionError: stats", "names no observable with its values"),  # the suite's failures are the one format
        ("Error", "names no observable with its values"),
    ],
)
def test_an_entry_without_the_observable_and_both_values_is_refused(expects: str, why: str) -> None:
    with pytest.raises(xfails.BadEntry, match=r"^x\.txt:1: .*" + why):
        xfails.parse(f"t.py::test_a  # expects: {expects}  # why", "x.txt")


@pytest.mark.parametrize(
    "expects",
    [
        "stats()['free']=3, but should be 2",
        "request 5 (stats 0): response='ok free=10 used=1', but should be 'ok free=9 used=1'",
        'stats()["free"]=1, but should be 0 [stats(), after append(0, 0, T=2)]',
        "[block_table(s) for s in (0, 1)]=[[0], [1]], but should be [[1], [0]]",
        "DriverError: request 3 (stats 0): no answer",
    ],
)
def test_an_entry_with_the_observable_and_both_values_is_accepted(expects: str) -> None:
    assert xfails.parse(f"t.py::test_a  # expects: {expects}  # why", "x.txt")["t.py::test_a"].expects == expects


def test_the_engines_lists_are_entries_of_the_one_format_each_naming_its_upstream_issue() -> None:
    """Each engine's expected failure: the one format with both values, and why naming vLLM's or nano-vllm's
    issue (`#NUMBER`) or `new` (found here, not yet reported)."""
    for path in sorted((ROOT / "engines").glob("*.xfails")):
        for entry in xfails.parse(path.read_text(encoding="utf-8"), str(path)).values():  # BadEntry names the line
            assert re.search(r"#\d+|\bnew\b", entry.why), f"{entry.where}: why={entry.why!r} names no upstream issue and not 'new'"


def test_an_entry_naming_no_collected_test_is_stale() -> None:
    entries = xfails.parse(
        "tests/test_catalog.py::test_gone  # expects: x=1, but should be 2  # why\n"
        "tests/test_gone.py::test_a  # expects: x=1, but should be 2  # why\n"
        "tests/test_prefix.py::test_elsewhere  # expects: x=1, but should be 2  # why\n"
        "tests/test_catalog.py::test_here  # expects: x=1, but should be 2  # why\n",
        "x.txt",
    )
    problems = xfails.refused(entries, ["tests/test_catalog.py::test_here"], ROOT)
    assert problems == [f"x.txt:1: tests/test_catalog.py::test_gone {xfails.STALE}", f"x.txt:2: tests/test_gone.py::test_a {xfails.STALE}"]
    # a file whose tests the command line names one by one: its other entries are not judged
    problems = xfails.refused(entries, ["tests/test_catalog.py::test_here"], ROOT, partly=["tests/test_catalog.py"])
    assert problems == [f"x.txt:2: tests/test_gone.py::test_a {xfails.STALE}"]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_stale_entry_is_a_usage_error_and_a_deselected_one_is_not(tmp_path: Path, workers: str) -> None:
    """A geometry no longer walked is refused before any test runs, in one process and under xdist; a test
    deselected (-k) is still collected, so its entry stands."""
    listed = tmp_path / "xfails.txt"
    listed.write_text(
        "tests/test_catalog.py::test_hand_example_block_table  # expects: x=1, but should be 2  # deselected below\n"
        "tests/test_catalog.py::test_bad_arguments_constructor[gone]  # expects: x=1, but should be 2  # stale\n"
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, f"--xfails={listed}", "-k", "gather", "tests/test_catalog.py"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"{listed}:2: tests/test_catalog.py::test_bad_arguments_constructor[gone] names no test this run collects" in run.stderr, run.stderr[-3000:]
    assert f"{listed}:1" not in run.stderr and " passed" not in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]


def test_a_block_table_hint_is_given_only_where_block_ids_differ() -> None:
    """The profile's hint (ids are names, or the lowest free) beside a table of other ids, never beside a
    failure about a table's memory or type (an aliasing check, its dtype)."""
    saved = assertions.table_hint
    assertions.table_hint = lambda: "HINT"
    try:
        assert assertions.message("block_table(0)", [1, 2], [1, 3], "block_table(0)").endswith("(HINT)")
        assert assertions.message("block_table(0, 1)", [1, 2], [1, 3], "block_table(0, 1)").endswith("(HINT)")
        assert assertions.message("[block_table(s) for s in (0, 1)]", [[0], [1]], [[1], [0]], "x").endswith("(HINT)")
        aliasing = "block_table(0) shares memory with the array it returned before"
        assert "HINT" not in assertions.message(aliasing, True, False, "block_table(0)")
        assert "HINT" not in assertions.message("block_table(0) after changing the array it returned", [-7], [3], "block_table(0)")
        assert "HINT" not in assertions.message("block_table(0).dtype", "int64", "int32", "block_table(0)")
    finally:
        assertions.table_hint = saved


def test_the_documents_example_entries_are_entries() -> None:
    text = (ROOT / "docs" / "GATING.md").read_text(encoding="utf-8").split("## A port in progress", 1)[1]
    example = text.split("```", 2)[1]
    assert len(xfails.parse(example, "docs/GATING.md")) == 2


def test_an_entry_beside_the_tests_named_one_by_one_is_not_stale(tmp_path: Path) -> None:
    """`pytest FILE::TEST` collects that test alone: the entry for another test of FILE names no test collected,
    yet is not stale."""
    listed = tmp_path / "xfails.txt"
    listed.write_text("tests/test_catalog.py::test_hand_example_block_table  # expects: x=1, but should be 2  # not run here\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", f"--xfails={listed}",
               "tests/test_catalog.py::test_gather_preserves_head_token_dimension_order"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
