"""The gate itself (paged_gate, `paged-gate`, `ci/gate`): its options, where it finds the suite, its
verdict's counts, its JUnit XML, and its FAIL path on the broken examples (ci/examples): FAIL (exit 1),
a transcript at the named place, and a replay of that transcript that fails on the broken cache and
passes on ours. The FAIL path runs the gate as a command, on a small selection of the suite, in seconds.

Marked `gate`: mutmut's selection leaves these out (the gate's subprocesses import the unmutated
paged, so they cannot see a mutant and only cost time there). They test our tooling, not the
implementation under test, so a gate of another implementation skips them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import harness
from paged_gate import junit
from paged_gate.cli import main, parse
from paged_gate.conformance import Outcomes
from paged_gate.locate import scripts_first, suite_root, vector_files, vectors_dir
from paged_gate.verdict import Case, Step, short

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_engines does
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

EXAMPLES = suite_root() / "ci" / "examples"
BROKEN = ["broken_allocation", "broken_copy_one_layer"]


def gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m paged_gate ARGS` from cwd, with the broken examples importable; bounded explorer and shrinking."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.update(PAGED_EXPLORE_SECONDS="10", PAGED_SHRINK_SECONDS="5")
    # The examples are broken under the default profile (broken_allocation's ids are a legal choice
    # under allocation=any): a profile the outer run was given must not reach the gate under test.
    env.pop("PAGED_PROFILE", None)
    return subprocess.run([sys.executable, "-m", "paged_gate", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def verdict(run: subprocess.CompletedProcess[str]) -> str:
    """The verdict's head line (PASS, FAIL or CANNOT RUN), and the output when there is none."""
    heads = [line for line in run.stdout.splitlines() if line.startswith("=== gate verdict")]
    return heads[-1] if heads else run.stdout[-3000:] + run.stderr[-3000:]


def test_every_option_parses_and_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    o = parse([
        "--impl", "exec:./driver", "--xfails", "x.txt", "--vectors", "--replay", "r.txt", "--profile", "allocation=any",
        "--exhaustive", "--depth", "3", "--mutmut", "--transcript-out", "t.txt", "--all-failures", "--junit-xml", "j.xml",
        "--", "-k", "fork", "tests/test_catalog.py",
    ])
    assert (o.impl, o.profile, o.depth, o.extra) == ("exec:./driver", "allocation=any", 3, ["-k", "fork", "tests/test_catalog.py"])
    assert o.vectors and o.exhaustive and o.mutmut and o.all_failures and not o.ours
    assert [o.xfails, o.replay, o.transcript_out, o.junit_xml] == [str(tmp_path / n) for n in ("x.txt", "r.txt", "t.txt", "j.xml")]
    plain = parse([])
    assert (plain.impl, plain.ours, plain.depth, plain.transcript_out, plain.extra) == ("paged", True, 6, None, [])


def test_an_exec_command_names_its_files_absolutely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite starts a driver from its own folder, so the words of exec:CMD that name a file here are
    made absolute; other words (a program on PATH, options, module names, folders) are kept."""
    (tmp_path / "target").mkdir()
    (tmp_path / "paged").mkdir()
    (tmp_path / "target" / "driver").write_text("")
    (tmp_path / "my driver.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert parse(["--impl", "exec:./target/driver --allocation=lowest-free"]).impl == f"exec:{tmp_path / 'target' / 'driver'} --allocation=lowest-free"
    assert parse(["--impl", "exec:python 'my driver.py' -m x"]).impl == f"exec:python '{tmp_path / 'my driver.py'}' -m x"
    assert parse(["--impl", "exec:paged-driver --impl paged"]).impl == "exec:paged-driver --impl paged"
    assert parse(["--impl", "broken_allocation"]).impl == "broken_allocation"


def test_the_vectors_are_found_where_the_tests_look_for_them() -> None:
    assert vectors_dir() == suite_root() / "ci" / "vectors"
    assert (suite_root() / "tests" / Path(__file__).name).is_file() and (suite_root() / "pyproject.toml").is_file()
    files = vector_files()
    assert files and all(f.suffix == ".txt" and f.parent == vectors_dir() for f in files)
    assert (vectors_dir() / "NOTES.md").is_file()


def test_the_scripts_folder_comes_first_on_path_once() -> None:
    import sysconfig

    scripts = sysconfig.get_path("scripts")
    path = scripts_first(os.pathsep.join(["/a", scripts, "/b"]))
    assert path.split(os.pathsep) == [scripts, "/a", "/b"]
    assert scripts_first(path) == path


def test_the_summary_counts_each_outcome_and_skip_reason() -> None:
    outcomes = Outcomes({
        "t::a": {"outcome": "passed"},
        "t::b": {"outcome": "failed", "detail": "boom"},
        "t::c": {"outcome": "error", "detail": "setup"},
        "t::d": {"outcome": "skipped", "detail": "Skipped: Python surface, no meaning for a driver"},
        "t::e": {"outcome": "skipped", "detail": "written for allocation=any; the port has ..."},
        "t::f": {"outcome": "skipped", "detail": "needs prefix_caching"},
        "t::g": {"outcome": "xpassed", "detail": "listed"},
    })
    lines = outcomes.summary("x.txt", maxfail=2)
    assert lines[0] == (
        "7 tests run: 1 passed, 2 failed, 3 skipped (1 Python surface, 1 vector files for other profile values, 1 other), "
        "0 failed as listed in x.txt; stopped after 2 failures (--all-failures runs every test)"
    )
    assert lines[1:] == ["  NOW PASSES (take it off x.txt): t::g", "  skipped t::f: needs prefix_caching"]
    assert outcomes.failures() == ["t::b", "t::c"]


def test_a_short_message_drops_hypothesis_report() -> None:
    detail = "AssertionError: block_table(0)[0]=3, but should be 0\n  x = 1\nFailing test case: ...\nmore"
    assert short(detail) == "AssertionError: block_table(0)[0]=3, but should be 0"


def test_junit_lists_every_case_and_merges_pytest_report(tmp_path: Path) -> None:
    report = tmp_path / "pytest.xml"
    report.write_text('<testsuites><testsuite name="pytest" tests="1"><testcase classname="t" name="a"/></testsuite></testsuites>')
    broken = tmp_path / "broken.xml"
    broken.write_text('<testsuites><testsuite name="pytest" tests="0"/></testsuites>')
    steps = [
        Step("conformance", True, "ok", 1.0, junit=report),
        Step("vectors", False, "1 differs", 2.0, [Case("vectors", "v1"), Case("vectors", "v2", failure="request 3: x\nmore"), Case("vectors", "v3", skipped="written for")]),
        Step("planted mutants", False, "see above", 3.0),
        Step("conformance", False, "pytest exit 4 (usage error)", 0.5, junit=broken),
    ]
    out = tmp_path / "deep" / "gate.xml"
    junit.write(out, steps)
    suites = list(ET.parse(out).getroot())
    assert [s.get("name") for s in suites] == ["conformance", "vectors", "planted mutants", "conformance"]
    assert [c.get("name") for c in suites[0]] == ["a"]
    assert [(c.get("name"), [e.tag for e in c]) for c in suites[1]] == [("v1", []), ("v2", ["failure"]), ("v3", ["skipped"])]
    assert suites[1].find("testcase/failure").get("message") == "request 3: x"  # type: ignore[union-attr]
    assert (suites[1].get("tests"), suites[1].get("failures"), suites[1].get("skipped")) == ("3", "1", "1")
    assert [[e.tag for e in c] for c in suites[2]] == [["failure"]]
    assert [[e.tag for e in c] for c in suites[3]] == [["error"]]


def test_an_unreachable_implementation_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # main() puts the scripts folder first: undone after the test
    assert main(["--impl", "no_such_module_anywhere", "--vectors", "--junit-xml", str(tmp_path / "j.xml")]) == 2
    assert "=== gate verdict for no_such_module_anywhere: CANNOT RUN ===" in capsys.readouterr().out
    assert [c.get("name") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")] == ["gate"]


@pytest.mark.parametrize("broken", BROKEN)
def test_a_broken_cache_fails_with_a_transcript_that_replays(broken: str, tmp_path: Path) -> None:
    """The conformance path, on the catalog alone: FAIL, a transcript at --transcript-out and JUnit XML
    naming the failures; the transcript's replay fails on the broken cache and passes on ours."""
    transcript, xml = tmp_path / "out" / "t.txt", tmp_path / "gate.xml"
    run = gate("--impl", broken, "--transcript-out", str(transcript), "--junit-xml", str(xml), "--", "tests/test_catalog.py", "-n", "0", cwd=tmp_path)
    assert run.returncode == 1 and ": FAIL (" in verdict(run), verdict(run)
    assert transcript.is_file() and f"the failure's transcript: {transcript}" in run.stdout
    failures = list(ET.parse(xml).getroot().iter("failure"))
    assert failures, "the JUnit XML names no failure"
    again = gate("--replay", str(transcript), "--impl", broken, cwd=tmp_path)
    assert again.returncode == 1 and "0 of 1 transcripts match, 1 differ" in again.stdout, verdict(again)
    ours = gate("--replay", str(transcript), "--impl", "paged", cwd=tmp_path)
    assert ours.returncode == 0 and "1 of 1 transcripts match" in ours.stdout, verdict(ours)


def test_block_ids_outside_the_pool_fail_under_allocation_any(tmp_path: Path) -> None:
    """ci/examples/shifted_ids reports every id one too high (a vLLM adapter that forgot its null block's
    shift): right up to a renaming, but its last block is N in a pool of N. FAIL, naming the pool's range."""
    run = gate("--impl", "shifted_ids", "--profile", "allocation=any", "--", "tests/test_catalog.py", "-n", "0", cwd=tmp_path)
    assert run.returncode == 1 and ": FAIL (" in verdict(run), verdict(run)
    assert "but should be a block id of the pool, 0..3 (num_blocks=4)" in run.stdout, run.stdout[-3000:]


def test_failing_vectors_leave_the_first_as_the_transcript(tmp_path: Path) -> None:
    run = gate("--vectors", "--impl", "broken_allocation", "--transcript-out", str(tmp_path / "t.txt"), cwd=tmp_path)
    assert run.returncode == 1 and ": FAIL (" in verdict(run), verdict(run)
    first = next(line for line in run.stdout.splitlines() if line.startswith("  FAILED ")).split()[1].rstrip(":")
    assert (tmp_path / "t.txt").read_bytes() == (vectors_dir() / f"{first}.txt").read_bytes()


def test_a_passing_run_removes_a_stale_transcript(tmp_path: Path) -> None:
    stale = tmp_path / "t.txt"
    stale.write_text("an earlier run's transcript\n")
    run = gate("--replay", str(vector_files()[0]), "--impl", "paged", "--transcript-out", str(stale), cwd=tmp_path)
    assert run.returncode == 0 and ": PASS (" in verdict(run), verdict(run)
    assert not stale.exists()
