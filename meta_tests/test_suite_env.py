"""A suite no port can narrow (issue 52): the gate's pytest runs obey none of pytest's selecting variables
(PYTEST_ADDOPTS, PYTEST_PLUGINS, PYTEST_DISABLE_PLUGIN_AUTOLOAD) but its own. The caller's are refused,
naming the variable; one a module writes on import is never handed on, to pytest or to xdist's workers,
and the verdict names it (mutants/ports/narrows_its_suite.py: its `with` never closes, and it deselects
the one test that sees that). A test gone that the gate's own selection kept makes the verdict PARTIAL,
never PASS: the outcomes record counts what pytest collected, what the suite's configuration leaves out
(`slow`) and what --covered deselected.

Marked `gate`, as meta_tests/test_gate.py (whose helpers these use): our tooling, in subprocesses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness
from testkit.config import SELECTING
from testkit.locate import suite_root
from testkit.outcomes import read
from wire.target import Target, parse as parse_impl
from paged_gate.conformance import Outcomes
from paged_gate.verdict import Scope, Step, certified, word
from meta_tests.test_gate import NO_SEARCH, gate, verdict
from meta_tests.test_verdict import port

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_gate does
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

WITH_TEST = "tests/test_errors.py::test_with_closes_on_exit_even_on_error"


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_port_that_narrows_the_suite_on_import_fails(workers: str, tmp_path: Path) -> None:
    """In the gate's process (-n 0) and again in pytest's, before xdist starts its workers (-n 2): the
    variable the port wrote is not obeyed, the test it deselected runs and fails, and the verdict names it."""
    run = gate("--impl", port("narrows_its_suite", tmp_path), "--", "tests/test_errors.py", "-n", workers, cwd=tmp_path,
               env_extra=NO_SEARCH)  # stats() on a closed cache: past the wire
    out = run.stdout + run.stderr
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), out[-3000:]
    assert f"FAILED {WITH_TEST}" in run.stdout, out[-3000:]
    named = "the implementation set HYPOTHESIS_PROFILE='dev', PYTEST_ADDOPTS=\"-k 'not test_with_closes_on_exit_even_on_error'\" in the gate's process"
    assert named in run.stdout, out[-3000:]


@pytest.mark.parametrize("name", SELECTING)
def test_the_callers_selecting_variable_is_refused(name: str, tmp_path: Path) -> None:
    run = gate("--impl", "paged", "--", "tests/test_errors.py", "-n", "0", cwd=tmp_path, env_extra={name: "-k nothing_at_all"})
    assert run.returncode == 2 and verdict(run).endswith(": CANNOT RUN ==="), run.stdout[-3000:]
    assert f"the environment sets {name}='-k nothing_at_all', which the suite's pytest runs would obey" in run.stdout, run.stdout[-3000:]


def test_the_record_counts_what_another_selection_took(tmp_path: Path) -> None:
    """pytest run as the gate runs it, plus a -k of another's: the record's counts tell the gate's own
    selection (the slow soak tests) from the test the -k took, with xdist's workers as without."""
    for workers in ("0", "2"):
        record = tmp_path / f"outcomes-{workers}.json"
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", workers, "-q", "-o", "testpaths=tests",
               f"--outcomes={record}", "-k", "not test_with_closes_on_exit", "tests/test_errors.py", "tests/test_soak.py"]
        run = subprocess.run(cmd, cwd=suite_root(), capture_output=True, text=True, timeout=600)
        written = read(record)
        assert written is not None, run.stdout[-2000:] + run.stderr[-2000:]
        slow = written.left_out
        assert slow > 0 and written.deselected == slow + 1 and written.collected == len(written.selected) + slow + 1, written
        outcomes = Outcomes({}, written.selected, written.deselected, covered=written.covered, collected=written.collected, left_out=slow)
        assert outcomes.taken() == "1 deselected by something other than the gate", (workers, outcomes.taken())


def test_tests_gone_make_the_verdict_partial() -> None:
    """Deselected beyond the gate's own selection, or dropped with no word: PARTIAL, never PASS."""
    kept = Outcomes({}, ["a", "b"], deselected=3, covered=2, collected=5, left_out=1)
    assert kept.taken() == ""
    by_another = Outcomes({}, ["a"], deselected=4, covered=2, collected=5, left_out=1)
    dropped = Outcomes({}, ["a"], deselected=3, covered=2, collected=5, left_out=1)
    assert by_another.taken() == "1 deselected by something other than the gate"
    assert dropped.taken() == "1 collected, then neither selected nor deselected"
    module = Target(parse_impl("paged"), frozenset(), "", "paged.py")
    ok = [Step("conformance", True, "300 passed", exercised=frozenset())]
    assert word(ok, Scope(taken=dropped.taken())) == "PARTIAL" and word(ok, Scope()) == "PASS"
    assert certified(module, ok, Scope(taken=dropped.taken())).startswith(
        "PARTIAL, not a PASS: tests the gate selected did not run (1 collected, then neither selected nor deselected), of base contract"
    )
