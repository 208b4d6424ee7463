"""A verdict a port cannot talk its way into (issue 35): broken ports that once got exit 0 from the gate,
each gated again here as a command and given FAIL (or PARTIAL, where the run was narrowed), with the
message that says why. The ports are mutants/ports/*.py (modules on top of `paged`) and
mutants/drivers/first_session_only.py:

- xfails_its_bug raises pytest's XFailed when its bug would show, with no --xfails given;
- skips_nan raises unittest.SkipTest on NaN input;
- first_session_only announces prefix caching and the sliding window in its first session only;
- freed_ids_outside keeps freed-id state in a module-level WeakKeyDictionary keyed by the cache, which
  copies of the cache object never carry: `--exhaustive` replays each state's calls;
- two_heads_two_blocks fails only on the explorer's 2-block, 2-head pool: after a harmless `-- -q`,
  the vectors and the explorer still run (and the explorer fails it);
- an --xfails entry for a test that passes, one whose text names no observable (`expects: Error`), one
  naming 11 tests under xdist.

Marked `gate`, as meta_tests/test_gate.py (whose helpers these use): our tooling, in subprocesses.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness
from wire.target import Target, parse as parse_impl
from paged_gate.verdict import Scope, Step, certified
from meta_tests.test_gate import NO_SEARCH, gate, verdict

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_gate does
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

HERE = Path(__file__).resolve().parent
PORTS, DRIVERS = HERE.parent / "mutants" / "ports", HERE.parent / "mutants" / "drivers"


def port(name: str, folder: Path) -> str:
    """The broken port `name`, copied into the gate's working folder (which the gate's PYTHONPATH holds)."""
    shutil.copy(PORTS / f"{name}.py", folder / f"{name}.py")
    return name


def failed_with(run: subprocess.CompletedProcess[str], *says: str) -> None:
    """FAIL (exit 1), and each text in what the gate printed (pytest's usage errors go to its stderr)."""
    out = run.stdout + run.stderr
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), out[-3000:]
    for text in says:
        assert text in out, (text, out[-3000:])


def test_an_expected_failure_no_entry_lists_fails(tmp_path: Path) -> None:
    run = gate("--impl", port("xfails_its_bug", tmp_path), "--", "tests/test_catalog.py", "-k", "fork_shares or gather_preserves", "-n", "0", cwd=tmp_path)
    failed_with(run, "outcome=xfailed ('fork of a sequence holding blocks: not done yet'), but should be passed",
                "no --xfails entry names this test")
    assert "failed as listed" not in verdict(run)


def test_a_skip_the_suite_does_not_make_fails(tmp_path: Path) -> None:
    run = gate("--impl", port("skips_nan", tmp_path), "--", "tests/test_data.py", "-k", "round", "-n", "0", cwd=tmp_path,
               env_extra=NO_SEARCH)  # a skip: no call sequence shows it
    failed_with(run, "skip reason='NaN input is not supported by this port', but should be one of the suite's own",
                "a skip raised by the implementation (unittest.SkipTest, pytest.skip) is a failure")


def first_session_only(tmp_path: Path) -> str:
    return f"exec:{sys.executable} {DRIVERS / 'first_session_only.py'} {tmp_path / 'first-session-done'}"


ANNOUNCED = "announced=nothing, but should be hybrid page_tables prefix_caching sliding_window: what this driver's first session announced"


def test_every_session_of_a_driver_announces_what_the_first_did(tmp_path: Path) -> None:
    """The whole gate: its first hello claims both capabilities, the vectors' session announces none."""
    run = gate("--impl", first_session_only(tmp_path), cwd=tmp_path)
    failed_with(run, ANNOUNCED)
    assert "FAIL  vectors" in run.stdout


def test_the_suites_driver_sessions_announce_what_the_first_did(tmp_path: Path) -> None:
    """The suite alone (narrowed): its processes are told the gate's first hello (PAGED_ANNOUNCED)."""
    run = gate("--impl", first_session_only(tmp_path), "--", "tests/test_catalog.py", "-k", "hand_example", "-n", "0", cwd=tmp_path)
    failed_with(run, ANNOUNCED)


def test_a_step_with_no_vector_of_a_part_does_not_silence_it() -> None:
    """A vectors step that offers no vector of a part (a corpus without the hybrid family, as before it) does not
    silence it: the suite's hybrid tests alone claim it; a suite whose hybrid tests did not pass does not."""
    hybrid = Target(parse_impl("mine"), frozenset({"prefix_caching", "sliding_window", "hybrid"}), "", "mine.py")
    both = frozenset({"prefix_caching", "sliding_window"})
    vectors = Step("vectors", True, "", exercised=both, offered=both)
    ran = [vectors, Step("conformance", True, "", exercised=both | {"hybrid"})]
    assert certified(hybrid, ran, Scope()) == "PASS: base contract, prefix caching, sliding window, hybrid models, Python surface (not tested: page tables (not announced))"
    silent = [vectors, Step("conformance", True, "", exercised=both)]
    assert certified(hybrid, silent, Scope()) == (
        "PASS: base contract, prefix caching, sliding window, Python surface "
        "(not tested: hybrid models (announced, but no vector or test of it passed in: conformance); page tables (not announced))"
    )


def test_a_driver_announcing_hybrid_is_claimed_only_when_its_vectors_and_tests_passed() -> None:
    """Through a driver that announces `hybrid` (python -m wire.driver): hybrid models are claimed when the
    hybrid vectors and tests ran and passed; hybrid vectors offered but none passed leave them not tested."""
    driver = Target(parse_impl("exec:./d"), frozenset({"prefix_caching", "sliding_window", "hybrid"}), "", "./d")
    every = frozenset({"prefix_caching", "sliding_window", "hybrid"})
    ran = [Step("vectors", True, "", exercised=every, offered=every), Step("conformance", True, "", exercised=every)]
    assert certified(driver, ran, Scope()) == (
        "PASS: base contract, prefix caching, sliding window, hybrid models (not tested: page tables (not announced); Python surface (a driver has none))"
    )
    skipped = [Step("vectors", True, "", exercised=every - {"hybrid"}, offered=every), Step("conformance", True, "", exercised=every)]
    assert certified(driver, skipped, Scope()) == (
        "PASS: base contract, prefix caching, sliding window (not tested: hybrid models (announced, but no vector or test "
        "of it passed in: vectors); page tables (not announced); Python surface (a driver has none))"
    )


def test_the_headline_claims_a_part_only_when_its_vectors_and_tests_passed() -> None:
    windowed = Target(parse_impl("exec:./w"), frozenset({"prefix_caching", "sliding_window"}), "", "./w")
    both = frozenset({"prefix_caching", "sliding_window"})
    ran = [Step("vectors", True, "", exercised=both), Step("conformance", True, "", exercised=both)]
    assert certified(windowed, ran, Scope()) == (
        "PASS: base contract, prefix caching, sliding window (not tested: hybrid models (not announced); page tables (not announced); Python surface (a driver has none))"
    )
    silent = [Step("vectors", True, "", exercised=frozenset({"prefix_caching"})), Step("conformance", True, "", exercised=frozenset())]
    assert certified(windowed, silent, Scope()) == (
        "PASS: base contract only (not tested: prefix caching (announced, but no vector or test of it passed in: conformance); "
        "sliding window (announced, but no vector or test of it passed in: vectors, conformance); hybrid models (not announced); page tables (not announced); "
        "Python surface (a driver has none))"
    )
    narrowed = [Step("conformance", True, "", exercised=frozenset({"sliding_window"}))]  # `-- tests/test_window.py`: the suite alone
    assert certified(windowed, narrowed, Scope(narrowed="tests/test_window.py")).startswith(
        "PARTIAL, not a PASS: only the tests `-- tests/test_window.py` selects, of base contract, sliding window (not tested: prefix caching (announced"
    )


def test_a_harmless_option_after_the_dashes_keeps_the_vectors_and_the_explorer(tmp_path: Path) -> None:
    """`-- -q` selects nothing: the whole gate runs, its vectors (which pass) and its explorer (which fails)."""
    run = gate("--impl", port("two_heads_two_blocks", tmp_path), "--", "-q", cwd=tmp_path)
    failed_with(run, "PASS  vectors", "FAIL  explorer, depth 3", "N=2 B=2 L=1 H=2 D=2")


@pytest.mark.slow
def test_dropping_a_plugin_after_the_dashes_is_partial(tmp_path: Path) -> None:
    """`-- -p no:unittest` drops the seven state machines: the suite runs alone, and the run is PARTIAL. Slow
    (the suite without its machines): `pytest -m slow meta_tests/test_verdict.py`, which .ci/run runs."""
    (tmp_path / "reference.py").write_text("from paged import OutOfBlocks, PagedKVCache  # paged under another name: no planted mutants\n")
    run = gate("--impl", "reference", "--", "-p", "no:unittest", cwd=tmp_path, timeout=1800)
    assert run.returncode == 3 and "PARTIAL, not a PASS: only the tests `-- -p no:unittest` selects" in verdict(run), run.stdout[-3000:]
    assert "NOT RUN" not in run.stdout and "vectors (" not in run.stdout.split("=== gate verdict")[-1]


def test_state_outside_the_cache_object_fails_the_exhaustive_explorer(tmp_path: Path) -> None:
    run = gate("--impl", port("freed_ids_outside", tmp_path), "--exhaustive", cwd=tmp_path)
    failed_with(run, "add_seq(0); free(0); add_seq(0); append(0, 0, T=1)", "shortest failing sequence")


def xfails_file(tmp_path: Path, line: str) -> str:
    listed = tmp_path / "xfails.txt"
    listed.write_text(line + "\n")
    return str(listed)


def test_a_listed_test_that_passes_fails(tmp_path: Path) -> None:
    listed = xfails_file(tmp_path, "tests/test_catalog.py::test_hand_example_block_table  # expects: block_table(0)[0]=1, but should be 0  # once broken")
    run = gate("--impl", "paged", "--xfails", listed, "--", "tests/test_catalog.py", "-k", "hand_example or gather_preserves", "-n", "0", cwd=tmp_path)
    failed_with(run, "outcome=passed, but should be the failure", "xfails are strict", "take its entry off the list",
                "every failure is a listed test that passed: no call answered wrongly, so there is no transcript to record")
    assert "the exhaustive explorer, for a shortest failing call sequence" not in run.stdout  # nothing wrong to look for


def test_an_entry_that_names_no_observable_is_refused(tmp_path: Path) -> None:
    """`expects: Error` would match any AssertionError (a gather's, say): the entry names no observable."""
    listed = xfails_file(tmp_path, "tests/test_catalog.py::test_fork_shares_until_a_write  # expects: Error  # copy on write of layer 0 only")
    run = gate("--impl", "broken_copy_one_layer", "--xfails", listed, "--", "tests/test_catalog.py", "-k", "fork_shares or gather_preserves", "-n", "0", cwd=tmp_path)
    failed_with(run, "'Error' names no observable", "pytest exit 4 (usage error)")


def test_an_entry_naming_several_tests_is_refused_under_xdist(tmp_path: Path) -> None:
    listed = xfails_file(tmp_path, "tests/test_catalog.py::test_bad_arguments_constructor  # expects: x=1, but should be 2  # why")
    run = gate("--impl", "paged", "--xfails", listed, "--", "tests/test_catalog.py", "-n", "2", cwd=tmp_path)
    failed_with(run, "test_bad_arguments_constructor names 11 tests", "pytest exit 4 (usage error)")
