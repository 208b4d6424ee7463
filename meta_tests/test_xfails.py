"""The suite's --xfails (testkit/xfails.py, tests/plugins/expected_failures.py): an entry is one test and the failure it expects.

Parsing refuses a file, a class, a line without its expected failure or reason, a test listed twice,
and (when the tests are collected) a parametrised test without its parameters. Run as a command on a
tiny implementation (mutants/ports/tiny_way.py) whose one test fails one way or another (TINY_WAY): the
listed way is an expected failure, recorded with its actual message; the other way fails, with both
texts; a listed test that passes is an xpass. Marked `gate` (our tooling, in subprocesses that import the unmutated paged).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness
from testkit import xfails

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup  # Hypothesis's dependency before 3.11

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_gate does
    pytest.skip("the suite's own tests of --xfails: run with --impl=paged", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
PORTS = ROOT / "mutants" / "ports"  # tiny_way.py, the tiny cache that fails one way or another (TINY_WAY)
HAND = "tests/test_catalog.py::test_hand_example_block_table"
PASSING = "tests/test_catalog.py::test_gather_preserves_head_token_dimension_order"
FREE_WAY = "num_free_blocks()=4, but should be 3"  # the tiny cache's "free" way, as the catalog reports it

def test_an_entry_is_a_test_its_expected_failure_and_why() -> None:
    text = f"# a comment\n\n{HAND}  # expects: {FREE_WAY}  # the pool # counts one more\n{PASSING} # expects: x=1, but should be 2 # y\n"
    entries = xfails.parse(text, "x.txt")
    assert entries[HAND] == xfails.Entry(HAND, FREE_WAY, "the pool # counts one more", "x.txt:3")
    assert (entries[PASSING].expects, entries[PASSING].why) == ("x=1, but should be 2", "y")


@pytest.mark.parametrize(
    "line, why",
    [
        (f"{HAND}  # the reason only", "the failure it expects and why"),
        (f"{HAND}  # expects: {FREE_WAY}", "the failure it expects and why"),
        (f"{HAND}  # expects:  # why", "the failure it expects and why"),
        ("tests/test_catalog.py  # expects: x=1, but should be 2  # why", "is a whole file"),
        ("tests/test_prefix.py::TestPrefixMachine  # expects: x=1, but should be 2  # why", "is a class"),
        (f"{HAND}  # expects: x=1, but should be 2  # why\n{HAND}  # expects: y=1, but should be 2  # why", "listed twice (first at x.txt:1)"),
        (f"{HAND}  # expects: Error  # why", "'Error' names no observable"),
        (f"{HAND}  # expects: = 3  # why", "'= 3' names no observable"),
    ],
)
def test_a_bad_entry_is_refused_with_why(line: str, why: str) -> None:
    with pytest.raises(xfails.BadEntry, match=r"^x\.txt:\d: .*" + why.replace("(", r"\(").replace(")", r"\)")):
        xfails.parse(line, "x.txt")


def test_a_parametrised_test_without_its_parameters_is_too_wide() -> None:
    entries = xfails.parse("t.py::test_a  # expects: x=1, but should be 2  # why\nt.py::test_b[1]  # expects: x=1, but should be 2  # why\nt.py::test_c  # expects: x=1, but should be 2  # why", "x.txt")
    problems = xfails.refused(entries, ["t.py::test_a[1]", "t.py::test_a[2]", "t.py::test_b[1]", "t.py::test_b[2]", "t.py::test_c"], ROOT)
    assert problems == [f"x.txt:1: t.py::test_a names 2 tests (e.g. t.py::test_a[1]); {xfails.ONE_EACH}"]


def test_an_exception_groups_members_are_in_the_message() -> None:
    group = ExceptionGroup("two failures", [AssertionError("a=1, but should be 2"), KeyError(3)])
    assert xfails.failure_message(group) == "ExceptionGroup: two failures (2 sub-exceptions)\nAssertionError: a=1, but should be 2\nKeyError: 3"


def suite(tmp_path: Path, way: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, str]]]:
    """pytest on HAND and PASSING against the tiny cache failing `way`, with both listed; its run and outcomes."""
    listed = tmp_path / "xfails.txt"
    listed.write_text(f"{HAND}  # expects: {FREE_WAY}  # one free block too many\n{PASSING}  # expects: anything=1, but should be 2  # listed, but passes\n")
    outcomes = tmp_path / "outcomes.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PORTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep), TINY_WAY=way)
    env.pop("PAGED_PROFILE", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--impl=tiny_way", f"--xfails={listed}", f"--outcomes={outcomes}", *args, HAND, PASSING]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return run, json.loads(outcomes.read_text())["tests"] if outcomes.exists() else {}


def test_the_listed_failure_is_expected_and_recorded_as_it_happened(tmp_path: Path) -> None:
    run, outcomes = suite(tmp_path, "free", "-n", "0")
    assert run.returncode == 1, run.stdout[-3000:]  # PASSING is listed, and passes
    assert outcomes[HAND] == {"outcome": "xfailed", "detail": f"AssertionError: {FREE_WAY} [num_free_blocks()]"}
    assert_strict(outcomes[PASSING])


def assert_strict(outcome: dict[str, str]) -> None:
    """A listed test that passes fails, saying so (xfails are strict, as pytest's strict=True)."""
    assert outcome["outcome"] == "failed", outcome
    assert outcome["detail"].startswith("outcome=passed, but should be the failure "), outcome
    assert "'anything=1, but should be 2'" in outcome["detail"] and "take its entry off the list" in outcome["detail"], outcome


def test_a_listed_test_that_fails_another_way_fails_with_both_texts(tmp_path: Path) -> None:
    run, outcomes = suite(tmp_path, "table", "-n", "1")  # under xdist (a controller and a worker), as the gate runs it
    assert run.returncode == 1, run.stdout[-3000:]
    assert outcomes[HAND]["outcome"] == "failed"
    detail = outcomes[HAND]["detail"]
    assert detail.startswith(f"{tmp_path / 'xfails.txt'}:1 expects {FREE_WAY!r}; the failure is:\nAssertionError: block_table(0)"), detail
    assert "not the failure listed in --xfails" in run.stdout and FREE_WAY in run.stdout
    assert_strict(outcomes[PASSING])


@pytest.mark.parametrize("expects, message, matched", [
    (FREE_WAY, f"AssertionError: {FREE_WAY} [num_free_blocks()]", True),
    ("blocks()=4, but should be 3", f"AssertionError: {FREE_WAY} [num_free_blocks()]", False),  # part of another observable's name
    (FREE_WAY, "AssertionError: num_free_blocks()=4, but should be 30", False),  # 3 is not 30
    ("KeyError: 3", "KeyError: 3", True),
    ("Error: 3", "KeyError: 3", False),  # a type matches whole, as the failure's whole first line
    ("response='ok 1', but should be 'ok 0'", "AssertionError: request 4 (add_seq 0 1 0): response='ok 1', but should be 'ok 0'", True),
])
def test_an_entry_matches_the_observable_it_names_whole(expects: str, message: str, matched: bool) -> None:
    assert xfails.Entry("t.py::t", expects, "why", "x.txt:1").matches_one(message) is matched


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_wide_entry_is_a_usage_error(tmp_path: Path, workers: str) -> None:
    """An entry naming the 11 cases of a parametrised test is refused before any test runs, in one process
    (the collection hook) and under xdist (the controller's hook, which the gate's `-n auto` uses)."""
    listed = tmp_path / "xfails.txt"
    listed.write_text("tests/test_catalog.py::test_bad_arguments_constructor  # expects: x=1, but should be 2  # why\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, f"--xfails={listed}", "tests/test_catalog.py"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
    assert "test_bad_arguments_constructor names 11 tests" in run.stderr and "would hide every other failure" in run.stderr, run.stderr[-3000:]
    assert " passed" not in run.stdout, run.stdout[-3000:]
