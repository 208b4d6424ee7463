"""The gate itself (paged_gate, `paged-gate`, `ci/gate`): its options, where it finds the suite, its
verdict's counts and what it certifies, its JUnit XML, and its FAIL path on the broken ports
(mutants/ports): FAIL (exit 1), a transcript at the named place, and a replay of that transcript that
fails on the broken cache and passes on ours; the whole gate ends at the first failing vector; an
implementation that exits, crashes or hangs never gets exit 0. These run the gate as a command, on a
small selection of the suite, in seconds. One test (marked slow: a venv with the package installed,
not editable) gates, from another folder, the installed `paged`, its `paged-driver` and a driver started
through that venv's `bin/python`.

Marked `gate`: mutmut's selection leaves these out (the gate's subprocesses import the unmutated
paged, so they cannot see a mutant and only cost time there). They test our tooling, not the
implementation under test, so a gate of another implementation skips them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests import harness
from paged_gate import junit
from paged_gate.cli import main
from paged_gate.conformance import Outcomes
from paged_gate.locate import scripts_first
from testkit.locate import suite_root, vector_files, vectors_dir
from paged_gate.options import parse
from paged_gate.plan import narrowing, telling_first
from wire.target import Target, parse as parse_impl
from paged_gate.verdict import Case, Scope, Step, certified, not_run, short

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":  # one skip for the module, as test_engines does
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

PORTS = suite_root() / "mutants" / "ports"  # the broken ports
BROKEN = ["broken_allocation", "broken_copy_one_layer"]


def gate(
    *args: str, cwd: Path, env_extra: dict[str, str] | None = None, command: list[str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m paged_gate ARGS` (or `command ARGS`) from cwd, with the broken ports (and cwd's modules)
    importable; bounded explorer and shrinking."""
    path = [str(PORTS), str(cwd), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path).rstrip(os.pathsep))
    env.update(PAGED_EXPLORE_SECONDS="10", PAGED_SHRINK_SECONDS="5")
    env.update(env_extra or {})
    # The examples are broken under the default profile (broken_allocation's ids are a legal choice
    # under allocation=any): a profile the outer run was given must not reach the gate under test.
    env.pop("PAGED_PROFILE", None)
    return subprocess.run([*(command or [sys.executable, "-m", "paged_gate"]), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# For a failure no call sequence shows (past the wire, a skip): the gate's explorer search for one would only spend
# its whole budget (PAGED_EXPLORE_SECONDS).
NO_SEARCH = {"PAGED_EXPLORE_SECONDS": "0"}


def verdict(run: subprocess.CompletedProcess[str]) -> str:
    """The verdict's head line (PASS, FAIL or CANNOT RUN), and the output when there is none."""
    heads = [line for line in run.stdout.splitlines() if line.startswith("=== gate verdict")]
    return heads[-1] if heads else run.stdout[-3000:] + run.stderr[-3000:]


def test_every_option_parses_and_paths_become_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    o = parse([
        "--impl", "exec:./driver", "--xfails", "x.txt", "--vectors", "--replay", "r.txt", "--profile", "allocation=any",
        "--exhaustive", "--depth", "3", "--mutmut", "--transcript-out", "t.txt", "--all-failures", "--junit-xml", "j.xml",
        "--partial-ok", "--timeout", "60", "--", "-k", "fork", "tests/test_catalog.py",
    ])
    assert (o.impl, o.profile, o.depth, o.timeout, o.extra) == ("exec:./driver", "allocation=any", 3, 60.0, ["-k", "fork", "tests/test_catalog.py"])
    assert o.vectors and o.exhaustive and o.mutmut and o.all_failures and o.partial_ok and not o.ours and o.channel is None
    assert [o.xfails, o.replay, o.transcript_out, o.junit_xml] == [str(tmp_path / n) for n in ("x.txt", "r.txt", "t.txt", "j.xml")]
    plain = parse([])
    assert (plain.impl, plain.ours, plain.depth, plain.transcript_out, plain.extra, plain.partial_ok) == ("paged", True, 6, None, [], False)


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


def test_an_exec_command_keeps_a_venvs_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv's bin/python is a symlink to the base interpreter, which has not the venv's packages: the
    word is made absolute as it is written, never resolved through the link."""
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.chdir(tmp_path)
    assert parse(["--impl", "exec:venv/bin/python -m wire.driver"]).impl == f"exec:{tmp_path / 'venv' / 'bin' / 'python'} -m wire.driver"


def test_the_vectors_are_found_where_the_tests_look_for_them() -> None:
    assert vectors_dir() == suite_root() / "ci" / "vectors"
    assert (suite_root() / "tests" / "test_catalog.py").is_file() and (suite_root() / "pyproject.toml").is_file()
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
        "t::h": {"outcome": "skipped", "detail": "Skipped: the implementation does not have the capability prefix_caching"},
        "t::g": {"outcome": "xpassed", "detail": "listed"},
        "u.py": {"outcome": "skipped", "detail": "Skipped: the gate's own tests"},
    }, selected=[f"t::{n}" for n in "abcdefgh"] + ["t::i"], deselected=4)
    lines = outcomes.summary("x.txt", maxfail=2)
    assert lines[0] == (
        "1 passed, 3 failed, 5 skipped, 0 failed as listed in x.txt (9 tests selected, 1 test files skipped whole; 4 deselected); "
        "stopped at 2 failures (--all-failures runs every test)"
    )
    assert lines[1:] == [
        "  skipped: 1 Python surface (a driver has none), 1 needing a capability not announced, 1 vector files for other profile values, 2 others:",
        "    t::f: needs prefix_caching",
        "    u.py: the gate's own tests",
    ]
    assert outcomes.failures() == ["t::b", "t::c", "t::g"] and outcomes.missing() == ["t::i"]  # a listed test that passes fails
    unlisted = Outcomes({"t::a": {"outcome": "xfailed"}, "t::b": {"outcome": "xfailed"}}, ["t::a", "t::b"], listed=frozenset({"t::a"}))
    assert unlisted.failures() == ["t::b"]  # an expected failure no entry lists
    assert Outcomes({"t::a": {"outcome": "passed"}}, ["t::a", "t::b"]).summary(None, 1)[0] == (
        "1 passed, 0 failed, 0 skipped (2 tests selected); 1 selected tests have no outcome (the first: t::b)"
    )


def test_the_verdict_names_what_it_certified() -> None:
    """PASS names the parts of the contract it checked and those it did not; a narrowed suite is PARTIAL;
    a run of one part certifies that part only."""
    ok, bad = [Step("vectors", True, "")], [Step("vectors", True, ""), Step("conformance", False, "")]
    module = Target(parse_impl("mine"), frozenset({"prefix_caching"}), "", "mine.py")
    bare_driver = Target(parse_impl("exec:./d"), frozenset(), "", "./d")
    assert certified(module, ok, Scope()) == "PASS: base contract, prefix caching, Python surface (not tested: sliding window (not announced); hybrid models (not announced); page tables (not announced))"
    assert certified(bare_driver, ok, Scope()) == (
        "PASS: base contract only (not tested: prefix caching (not announced); sliding window (not announced); hybrid models (not announced); page tables (not announced); "
        "Python surface (a driver has none))"
    )
    assert certified(module, ok, Scope(listed=2)) == (
        "PASS: base contract, prefix caching, Python surface (not tested: sliding window (not announced); hybrid models (not announced); page tables (not announced)); "
        "2 tests failed as --xfails lists them"
    )
    assert certified(module, ok, Scope(narrowed="-m catalog")).startswith("PARTIAL, not a PASS: only the tests `-- -m catalog` selects, of base")
    assert certified(bare_driver, ok, Scope(only="the conformance vectors")) == (
        "PASS, the conformance vectors only (prefix caching, sliding window, hybrid models, page tables not announced, not tested)"
    )
    windowed = Target(parse_impl("exec:./w"), frozenset({"prefix_caching", "sliding_window"}), "", "./w")
    assert certified(windowed, ok, Scope()) == (
        "PASS: base contract, prefix caching, sliding window (not tested: hybrid models (not announced); page tables (not announced); Python surface (a driver has none))"
    )
    assert certified(windowed, ok, Scope(only="the conformance vectors")) == "PASS, the conformance vectors only (hybrid models, page tables not announced, not tested)"
    assert certified(module, bad, Scope()) == certified(module, bad, Scope(narrowed="-k x")) == "FAIL"
    assert certified(module, [*ok, not_run("conformance", "the vectors failed first")], Scope()).startswith("PASS")


def test_only_arguments_that_select_nothing_keep_the_run_whole() -> None:
    """The QUIET list (docs/GATING.md) keeps a run whole; anything else may narrow it: PARTIAL. `-p` is not on
    it: `-p no:unittest` drops the seven state machines."""
    assert narrowing([]) == narrowing(["-n", "0", "-v", "--tb=short", "-rA", "-q", "--color", "yes", "-n0", "-s", "--durations=5"]) == ""
    for extra in (["-m", "catalog"], ["-k", "fork"], ["tests/test_catalog.py"], ["-n", "0", "--deselect", "x"], ["-x"],
                  ["-p", "no:unittest"], ["-pno:unittest"], ["-q", "-p", "no:randomly"], ["-o", "addopts="]):
        assert narrowing(extra) == " ".join(extra)


def test_the_vectors_that_tell_most_come_first() -> None:
    names = [p.stem for p in telling_first(vector_files())]
    assert names[0] == "s01-block-on-boundary" and names[-1].startswith(("prefix-random", "random", "window-random"))
    assert sorted(names) == sorted(p.stem for p in vector_files())
    assert names.index("error-precedence") < names.index("random-1")


def test_the_summary_counts_passing_tests_that_reached_the_engine() -> None:
    tests = {"t::a": {"outcome": "passed", "engine_calls": 3}, "t::b": {"outcome": "passed", "engine_calls": 0}}
    tests.update({"t::c": {"outcome": "failed", "engine_calls": 2}, "t::d": {"outcome": "passed"}})
    assert Outcomes(tests).summary(None, 0)[1] == (  # type: ignore[arg-type]
        "  1 of the 3 passing tests called into the engine's own code (the module's engine_calls() moved); "
        "1 made no call (the module's own code, or the suite's tests of itself), 1 kept no count (run with another implementation)"
    )
    assert Outcomes({"t::a": {"outcome": "passed"}}).summary(None, 0)[1:] == []  # a module that keeps no count


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


def test_an_unreachable_implementation_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # main() puts the scripts folder first: undone after the test
    assert main(["--impl", "no_such_module_anywhere", "--vectors", "--junit-xml", str(tmp_path / "j.xml")]) == 2
    assert "=== gate verdict for no_such_module_anywhere: CANNOT RUN ===" in capfd.readouterr().out  # printed by the gate's worker process
    assert [c.get("name") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")] == ["gate"]


@pytest.mark.parametrize("broken", BROKEN)
def test_a_broken_cache_fails_with_a_transcript_that_replays(broken: str, tmp_path: Path) -> None:
    """The conformance path, on the catalog alone: FAIL, a transcript at --transcript-out and JUnit XML
    naming the failures; the transcript's replay fails on the broken cache and passes on ours."""
    transcript, xml = tmp_path / "out" / "t.txt", tmp_path / "gate.xml"
    run = gate("--impl", broken, "--transcript-out", str(transcript), "--junit-xml", str(xml), "--", "tests/test_catalog.py", "-n", "0", cwd=tmp_path)
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), verdict(run)
    assert transcript.is_file() and f"the failure's transcript: {transcript}" in run.stdout
    failures = list(ET.parse(xml).getroot().iter("failure"))
    assert failures, "the JUnit XML names no failure"
    again = gate("--replay", str(transcript), "--impl", broken, cwd=tmp_path)
    assert again.returncode == 1 and "0 of 1 transcripts match, 1 differ" in again.stdout, verdict(again)
    ours = gate("--replay", str(transcript), "--impl", "paged", cwd=tmp_path)
    assert ours.returncode == 0 and "1 of 1 transcripts match" in ours.stdout, verdict(ours)


def test_block_ids_outside_the_pool_fail_under_allocation_any(tmp_path: Path) -> None:
    """mutants/ports/shifted_ids reports every id one too high (a vLLM adapter that forgot its null block's
    shift): right up to a renaming, but its last block is N in a pool of N. FAIL, naming the pool's range."""
    run = gate("--impl", "shifted_ids", "--profile", "allocation=any", cwd=tmp_path)
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), verdict(run)
    assert re.search(r"=(\d+), but should be a block id of the pool, 0\.\.(\d+) \(num_blocks=\d+\)", run.stdout), run.stdout[-3000:]


def test_also_renamed_is_one_walk_for_both_profiles_refused_where_it_means_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--exhaustive --also-renamed: the verdict names both profiles, every geometry says it checked each table up
    to a renaming. A usage error without --exhaustive; CANNOT RUN under a profile that compares tables up to a
    renaming already (allocation=any), given by --profile or declared by the port."""
    with pytest.raises(SystemExit) as exc:
        parse(["--also-renamed"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error: --also-renamed is an option of --exhaustive" in err, err
    for impl, profile, source in (("paged", ["--profile", "allocation=any"], "given by --profile"), ("shifted_ids", [], "declared by the implementation")):
        refused = gate("--impl", impl, "--exhaustive", "--also-renamed", *profile, cwd=tmp_path)
        assert refused.returncode == 2 and verdict(refused).endswith(": CANNOT RUN ==="), verdict(refused)
        assert f"--also-renamed: the profile under test, allocation=any ({source})" in refused.stdout, refused.stdout[-2000:]
    run = gate("--impl", "paged", "--exhaustive", "--also-renamed", "--depth", "2", cwd=tmp_path)
    assert run.returncode == 0 and verdict(run).startswith("=== gate verdict for paged, profile default and allocation=any (tables up to renaming) ("), verdict(run)
    walked = run.stdout.count(": agrees with the model (")
    assert walked > 1 and run.stdout.count("every table also checked up to a renaming of block ids (allocation=any's check)") == walked, run.stdout[-3000:]


def test_failing_vectors_leave_the_first_as_the_transcript(tmp_path: Path) -> None:
    run = gate("--vectors", "--impl", "broken_allocation", "--transcript-out", str(tmp_path / "t.txt"), cwd=tmp_path)
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), verdict(run)
    first = next(line for line in run.stdout.splitlines() if line.startswith("  FAILED ")).split()[1].rstrip(":")
    assert (tmp_path / "t.txt").read_bytes() == (vectors_dir() / f"{first}.txt").read_bytes()


def test_a_passing_run_removes_a_stale_transcript(tmp_path: Path) -> None:
    stale = tmp_path / "t.txt"
    stale.write_text("an earlier run's transcript\n")
    run = gate("--replay", str(vector_files()[0]), "--impl", "paged", "--transcript-out", str(stale), cwd=tmp_path)
    assert run.returncode == 0 and verdict(run).endswith(f": PASS, the transcript {vector_files()[0].name} only ==="), verdict(run)
    assert not stale.exists()


def test_the_whole_gate_ends_at_the_first_failing_vector(tmp_path: Path) -> None:
    """No `--`: the vectors first, and the first that differs ends the run with its transcript; the
    explorer and the suite are reported as not run."""
    run = gate("--impl", "broken_allocation", "--transcript-out", str(tmp_path / "t.txt"), cwd=tmp_path)
    lines = run.stdout[run.stdout.index("=== gate verdict"):].splitlines()
    assert run.returncode == 1 and lines[0].endswith(": FAIL ==="), verdict(run)
    assert lines[1].startswith("FAIL  vectors (") and "stopped at the first that differs" in lines[1], lines
    assert [line.split(":")[0] for line in lines if line.startswith("NOT RUN")] == [
        "NOT RUN  explorer, depth 3", "NOT RUN  conformance"
    ]
    first = next(line for line in lines if line.startswith("  FAILED ")).split()[1].rstrip(":")
    assert (tmp_path / "t.txt").read_bytes() == (vectors_dir() / f"{first}.txt").read_bytes()


# Modules that end the process, or never return, on import or at a call (mutants/ports): none may get exit 0.
@pytest.mark.parametrize("name, code, says", [
    ("exits_on_import", 2, "importing 'exits_on_import' raised SystemExit(0)"),
    ("os_exits_on_import", 2, "ended (exit status 0) while reaching the implementation"),
    ("hangs_on_import", 2, "reaching the implementation took longer than 2 s (PAGED_START_SECONDS)"),
    ("exits_at_a_call", 1, "the implementation raised SystemExit(0) during the vectors step"),
    ("os_exits_at_a_call", 1, "ended (exit status 0) during the vectors step"),
    ("crashes_at_a_call", 1, "ended (signal SIGSEGV) during the vectors step"),
    ("hangs_at_a_call", 2, "the vectors step took longer than 3 s (--timeout)"),
])
def test_an_implementation_that_ends_the_process_never_passes(name: str, code: int, says: str, tmp_path: Path) -> None:
    ci_gate = suite_root() / "ci" / "gate"  # in a checkout; the installed gate is the slow test's
    command = [sys.executable, str(ci_gate)] if ci_gate.is_file() else None
    # Short limits only where the module hangs: a loaded machine may take seconds to start the others.
    limits = ["--timeout", "3"] if name == "hangs_at_a_call" else []
    start = {"PAGED_START_SECONDS": "2" if name == "hangs_on_import" else "120"}
    run = gate("--impl", name, "--vectors", *limits, cwd=tmp_path, env_extra=start, command=command)
    word = {1: "FAIL", 2: "CANNOT RUN"}[code]
    assert run.returncode == code and verdict(run) == f"=== gate verdict for {name}: {word} ===", run.stdout[-2000:]
    assert says in run.stdout, run.stdout[-2000:]


def test_a_suite_that_ends_without_its_record_never_passes(tmp_path: Path) -> None:
    """os._exit(0) in a test ends pytest (-n 0: no worker to replace) with status 0 and no outcomes record."""
    run = gate("--impl", "os_exits_at_a_call", "--", "tests/test_catalog.py", "-k", "free_restores", "-n", "0", cwd=tmp_path)
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), run.stdout[-2000:]
    assert "pytest exit 0 (success) with no outcomes record" in run.stdout


def test_a_narrowed_suite_is_partial_and_counts_skips_as_pytest_does(tmp_path: Path) -> None:
    """`-- PATHS -k ...` selects part of the suite: PARTIAL, exit 3 (0 with --partial-ok), never PASS. The
    verdict's skip count is pytest's, a test file skipped whole included (test_gate's, for a driver)."""
    args = ["--impl", "exec:paged-driver", "--", "meta_tests/test_gate.py", "tests/test_catalog.py", "-k", "hand_example or bad_arguments", "-n", "0"]
    run = gate(*args, cwd=tmp_path)
    assert run.returncode == 3 and "PARTIAL, not a PASS: only the tests `-- meta_tests/test_gate.py" in verdict(run), run.stdout[-3000:]
    assert ": PASS" not in verdict(run)
    tail = run.stdout.splitlines()
    pytest_line = next(line for line in tail if " passed" in line and " skipped" in line and line.startswith("="))
    skipped = pytest_line.split(" skipped")[0].split()[-1]
    conformance = next(line for line in tail if line.startswith("PASS  conformance"))
    assert f" {skipped} skipped (" in conformance and "1 test files skipped whole" in conformance, (pytest_line, conformance)
    assert gate("--partial-ok", *args, cwd=tmp_path).returncode == 0



NO_PREFIX = """from paged import OutOfBlocks
from paged import PagedKVCache as Base


class PagedKVCache(Base):
    def __init__(self, num_blocks, block_size, n_layers, n_kv_heads, d_head):
        super().__init__(num_blocks, block_size, n_layers, n_kv_heads, d_head)
"""


def test_nothing_replayed_is_no_pass_and_a_port_without_prefix_caching_is_told_so(tmp_path: Path) -> None:
    """A transcript that needs a capability the port has not is skipped: nothing ran, so no PASS. The
    vectors pass on such a port, each vector that needs a capability it lacks is skipped with that reason,
    and the verdict says prefix caching and the sliding window were not tested."""
    (tmp_path / "no_prefix.py").write_text(NO_PREFIX)
    run = gate("--impl", "no_prefix", "--replay", str(vectors_dir() / "prefix-hit-takes-a-holder.txt"), cwd=tmp_path)
    assert run.returncode == 1 and verdict(run).endswith(": FAIL ==="), run.stdout[-2000:]
    assert "nothing was replayed, so nothing is certified" in run.stdout
    run = gate("--impl", "no_prefix", "--vectors", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-2000:]
    assert verdict(run).endswith(": PASS, the conformance vectors only (prefix caching, sliding window, hybrid models not announced, not tested) ===")
    skipped = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("skipped ")]
    missing = [line.partition(": the implementation does not have the capability ")[2].split(", ") for line in skipped]
    assert skipped and all(m and set(m) <= {"hybrid", "prefix_caching", "sliding_window"} for m in missing), skipped
    assert any(line.startswith("skipped window-") and line.endswith("capability sliding_window") for line in skipped), skipped
    assert any(line.startswith("skipped hybrid-") and line.endswith("capability hybrid") for line in skipped), skipped


@pytest.mark.slow
def test_the_installed_gate_runs_a_venvs_driver_and_never_exits_0_without_a_verdict(tmp_path: Path) -> None:
    """pip install (not editable) into a new venv; from another folder, with only the broken ports on PYTHONPATH,
    its paged-gate passes the vectors on `paged` (the installed one), on `exec:paged-driver` (the script installed
    beside it) and on `exec:VENV/bin/python -m wire.driver` (the venv's interpreter, through its symlink), and gives
    the modules that exit on import exit 2. Slow (a venv and a pip install): `pytest -m slow meta_tests/test_gate.py`,
    which .ci/run runs."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(suite_root())], check=True, timeout=900)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed = [str(venv / "bin" / "paged-gate")]
    alone = {"PYTHONPATH": str(PORTS)}  # never the checkout: `paged` and `wire` are the venv's
    for impl in ("paged", "exec:paged-driver", f"exec:{venv}/bin/python -m wire.driver"):
        run = gate("--impl", impl, "--vectors", cwd=elsewhere, command=installed, env_extra=alone)
        assert run.returncode == 0 and "PASS, the conformance vectors only" in verdict(run), run.stdout[-3000:] + run.stderr[-2000:]
        if impl == "paged":
            assert f"implementation under test: paged ({venv}/lib/" in run.stdout, run.stdout[:2000]
    for name in ("exits_on_import", "os_exits_on_import"):
        run = gate("--impl", name, "--vectors", cwd=elsewhere, command=installed, env_extra=alone)
        assert run.returncode == 2 and verdict(run) == f"=== gate verdict for {name}: CANNOT RUN ===", run.stdout[-2000:]
