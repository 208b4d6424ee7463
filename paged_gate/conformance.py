"""The conformance suite (`pytest --impl=...`, run from the suite's folder) in two passes, so that a
broken implementation gets its verdict quickly, and a passing one a verdict that counts what ran.

The first pass has Hypothesis's shrinking off (every failing test stops at its first failing
example), runs the cheap broad tests first and stops at the first failure (`maxfail`; 0 runs every
test). It passes only with the plugin's outcomes record, an outcome for every test pytest selected,
and at least one test passed: a run that ends early (a test that ends pytest's process) never
passes. If something failed,
the transcript that shows it is found (`evidence`): the exhaustive explorer's shortest failing call
sequence (within PAGED_EXPLORE_SECONDS, default 30); else a failing state machine's calls, shrunk
(for at most PAGED_SHRINK_SECONDS, default 20), else those of the machine the suite marks `evidence`; if
no machine fails, a failing vector's file, else the first failing test's calls. What the gate knows of a
test (a machine, a vector) it reads in the outcomes record (testkit/outcomes.py), never from its id.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from testkit import outcomes as record_of
from testkit.config import Config
from testkit.locate import suite_root, vectors_dir
from testkit.outcomes import ENGINE_CALLS, MACHINE, NEEDS, SHRINKS, VECTOR
from testkit.xfails import LISTED_PASSED, listed
from wire.replay import MISSING_CAPABILITY
from wire.transcript import OTHER_PROFILE, read

from paged_gate import suite_env
from paged_gate.exhaustive import explored
from paged_gate.transcripts import explain, keep
from paged_gate.verdict import short

PYTHON_SURFACE = "Python surface"  # the start of the plugin's skip reason for a driver
MEANING = {0: "success", 1: "tests failed", 2: "interrupted or collection error", 3: "pytest internal error", 4: "usage error", 5: "no tests collected"}


def banner(text: str) -> None:
    print(f"\n=== gate: {text} ===", flush=True)


def pytest(config: Config, args: list[str], profile: str) -> int:
    """Run pytest in the suite's folder with its own configuration, its settings from `config` (the
    environment it is given, over the one the gate controls: `suite_env`); its exit code."""
    root, impl = suite_root(), config.impl
    env = dict(config.child_env(suite_env.for_suite()), HYPOTHESIS_PROFILE=profile)
    env.pop("CI", None)
    # `--impl=X`, never `--impl X`: pytest pre-parses before the plugin adds --impl, and a bare
    # `paged` that names a folder here would be taken as the test path. -c and --rootdir: the suite's
    # pyproject.toml, never one found above an installed copy.
    # testpaths=tests: the conformance tests only, never the suite's tests of itself (meta_tests/, in a checkout).
    where = ["-c", str(root / "pyproject.toml"), f"--rootdir={root}", "-o", "testpaths=tests"]
    flags = ["-p", "no:cacheprovider", f"--impl={impl}", *args]
    print(f"$ HYPOTHESIS_PROFILE={profile} pytest {' '.join(a if ' ' not in a else repr(a) for a in flags)}   (in {root})", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", *where, *flags], cwd=root, env=env)


CAPABILITY = MISSING_CAPABILITY  # the start of the skip reason of a test or vector that needs a capability


@dataclass
class Outcomes:
    """The plugin's --outcomes record (`testkit.outcomes`): each test's outcome (node id -> {outcome, detail, ...};
    a test file skipped whole is one entry, as pytest counts it), the tests pytest selected to run, how many it
    deselected (`covered` of them because the steps before it ran them), the `evidence` tests, how many it
    collected before any was deselected (`left_out` of them by the suite's configuration); `listed`, the tests the --xfails file names."""

    tests: dict[str, dict[str, str]]
    selected: list[str] = field(default_factory=list)
    deselected: int = 0
    listed: frozenset[str] = frozenset()  # the tests --xfails lists
    covered: int = 0
    evidence: list[str] = field(default_factory=list)
    collected: int = 0
    left_out: int = 0

    def of(self, kind: str) -> list[str]:
        return [n for n, o in self.tests.items() if o["outcome"] == kind]

    def skipped_for(self, reason_start: str) -> list[str]:
        return [n for n in self.of("skipped") if self.tests[n].get("detail", "").removeprefix("Skipped: ").startswith(reason_start)]

    def failures(self) -> list[str]:
        """Failed and errored tests, and what the suite's plugin turns into failures should it ever be recorded:
        a listed test that passed (xfails are strict), an expected failure no entry lists."""
        return self.of("failed") + self.of("error") + self.of("xpassed") + [n for n in self.of("xfailed") if n not in self.listed]

    def listed_passes(self) -> list[str]:
        """Failures that are listed tests which passed (xfails are strict): no call answered wrongly."""
        return [n for n in self.of("failed") if n in self.listed and self.tests[n].get("detail", "").startswith(LISTED_PASSED)]

    def exercised(self) -> frozenset[str]:
        """The capabilities the passing tests needed (their `needs` marks)."""
        return frozenset(cap for n in self.of("passed") for cap in self.tests[n].get(NEEDS, "").split(",") if cap)

    def missing(self) -> list[str]:
        """Selected tests with no outcome: the run ended before them (a stop after a failure, or a crash)."""
        return [n for n in self.selected if n not in self.tests]

    def taken(self) -> str:
        """The tests gone that the gate's own selection (the suite's configuration, --covered) kept: deselected by
        something else (a -k in PYTEST_ADDOPTS, a plugin), or dropped after collection with no word; "" when none."""
        others = self.deselected - self.left_out - self.covered
        dropped = self.collected - self.deselected - len(self.selected)
        gone = ([f"{others} deselected by something other than the gate"] if others > 0 else []) + (
            [f"{dropped} collected, then neither selected nor deselected"] if dropped > 0 else [])
        return ", ".join(gone)

    def summary(self, xfails: str | None, maxfail: int) -> list[str]:
        """The counts as pytest's summary gives them, what was selected, and every skip by its reason (the
        usual ones counted, the others listed)."""
        skipped, failures = self.of("skipped"), self.failures()
        whole = [n for n in skipped if "::" not in n]
        head = f"{len(self.of('passed'))} passed, {len(failures)} failed, {len(skipped)} skipped"
        if xfails:
            head += f", {len(self.of('xfailed'))} failed as listed in {xfails}"
        head += f" ({len(self.selected)} tests selected" + (f", {len(whole)} test files skipped whole" if whole else "")
        head += (f"; {self.deselected} deselected" if self.deselected else "")
        head += (f", {self.covered} of them run already by the steps above (a vector replayed, a geometry walked)" if self.covered else "") + ")"
        if maxfail and len(failures) >= maxfail:
            head += f"; stopped at {'the first failure' if maxfail == 1 else f'{maxfail} failures'} (--all-failures runs every test)"
        missing = self.missing()
        if missing and not failures:
            head += f"; {len(missing)} selected tests have no outcome (the first: {missing[0]})"
        counted = [(PYTHON_SURFACE, "Python surface (a driver has none)"), (CAPABILITY, "needing a capability not announced"),
                   (OTHER_PROFILE, "vector files for other profile values")]
        usual = {n for start, _ in counted for n in self.skipped_for(start)}
        groups = [f"{len(self.skipped_for(start))} {what}" for start, what in counted if self.skipped_for(start)]
        others = [n for n in skipped if n not in usual]
        lines = [head, *self.engine_line()]
        if skipped:
            lines.append("  skipped: " + ", ".join(groups + ([f"{len(others)} others:"] if others else [])))
        lines += [f"    {n}: {self.tests[n].get('detail', '').removeprefix('Skipped: ')[:120]}" for n in others]
        return lines

    def engine_line(self) -> list[str]:
        """For a module that counts its calls into an engine's own code (`engine_calls()`, docs/GATING.md):
        how many passing tests made one."""
        passed = [self.tests[n] for n in self.of("passed")]
        counts = [int(o[ENGINE_CALLS]) for o in passed if ENGINE_CALLS in o]
        if not counts:
            return []
        reached, uncounted = sum(1 for c in counts if c > 0), len(passed) - len(counts)
        return [
            f"  {reached} of the {len(passed)} passing tests called into the engine's own code (the module's engine_calls() "
            f"moved); {len(counts) - reached} made no call (the module's own code, or the suite's tests of itself)"
            + (f", {uncounted} kept no count (run with another implementation)" if uncounted else "")
        ]


def read_outcomes(path: Path, xfails: str | None = None) -> Outcomes | None:
    """The record, or None when pytest wrote none (or an unreadable one)."""
    written = record_of.read(path)
    if written is None:
        return None
    return Outcomes(written.tests, written.selected, written.deselected, listed(xfails), written.covered, written.evidence,
                    written.collected, written.left_out)


def record(config: Config, test: str, transcript_out: Path, shrinks: bool) -> Path | None:
    """Run one test again, shrinking (for at most PAGED_SHRINK_SECONDS) if it `shrinks` (a Hypothesis test), and
    recording its calls; the transcript, or None when it passed."""
    banner(f"recording {test}" + (" (shrunk)" if shrinks else ""))
    transcript_out.unlink(missing_ok=True)
    shrinking = replace(config, shrink_seconds=config.gate_shrink_seconds)
    pytest(shrinking, ["-n", "0", "-q", f"--transcript={transcript_out.resolve()}", test], "gate-shrink")
    return transcript_out.resolve() if transcript_out.exists() else None


def evidence(config: Config, failures: list[str], outcomes: Outcomes, transcript_out: Path) -> tuple[Path | None, str]:
    """The transcript that shows the failure (always at transcript_out), and what it is."""
    banner("the exhaustive explorer, for a shortest failing call sequence")
    try:
        ok, detail, path, _, _ = explored(config, 6, transcript_out, config.explore_seconds)
    except Exception as exc:  # noqa: BLE001 - the explorer is a better transcript when it works, never the verdict
        print(f"  the explorer could not run: {type(exc).__name__}: {exc}")
        ok, detail, path = True, "", None
    if not ok and path is not None:
        found = [line.strip() for line in detail.splitlines() if line.strip().startswith(("shortest failing", "failing sequence", "what differs"))]
        return path, "the exhaustive explorer's " + "\n  ".join(found)
    machines = [n for n in failures if outcomes.tests[n].get(SHRINKS) == MACHINE]
    for test in machines or [n for n in outcomes.evidence if n not in outcomes.tests]:
        path = record(config, test, transcript_out, shrinks=True)
        if path is not None:
            return path, f"the calls of {test}, shrunk"
    for node in failures:
        vector = outcomes.tests[node].get(VECTOR)
        if vector:
            return keep(vectors_dir() / vector, transcript_out), f"the failing vector {Path(vector).stem}"
    first = failures[0]
    return record(config, first, transcript_out, shrinks=bool(outcomes.tests[first].get(SHRINKS))), f"the calls of {first}"


def conformance(
    config: Config, *, xfails: str | None, extra: list[str], transcript_out: Path, work: Path, maxfail: int, prog: str,
    covered: Path | None = None,
) -> tuple[bool, str, Path, int, frozenset[str], str]:
    """(passed, the verdict's lines, pytest's JUnit XML of the first pass, the tests that failed as xfails lists them,
    the capabilities its passing tests needed, the tests gone that the gate's own selection kept: `Outcomes.taken`): the suite run against `config.impl` with `config`'s settings (its profile resolved: a given one is handed
    to pytest, PAGED_PROFILE; a declared one pytest reads from the implementation again, `Config.child_env`), less the tests that
    would run again what the file `covered` lists (`testkit.covered`)."""
    impl = config.implementation
    outcomes_path, junit = work / "outcomes.json", work / "conformance-junit.xml"
    outcomes_path.unlink(missing_ok=True)
    args = ["-n", "auto", f"--outcomes={outcomes_path}", f"--junitxml={junit}", *([f"--maxfail={maxfail}"] if maxfail else [])]
    args += [f"--covered={covered}"] if covered is not None else []
    code = pytest(config, [*args, *([f"--xfails={xfails}"] if xfails else []), *extra], "gate")
    outcomes = read_outcomes(outcomes_path, xfails)
    if outcomes is None:
        why = "pytest's ERROR line above says why (a bad --xfails entry, say)" if code == 4 else (
            "did a test end pytest's process, os._exit in the implementation?")
        return False, (
            f"pytest exit {code} ({MEANING.get(code, 'unexpected')}) with no outcomes record: the suite did not "
            f"run to a verdict ({why})"
        ), junit, 0, frozenset(), ""
    failures = outcomes.failures()
    lines, taken = outcomes.summary(xfails, maxfail), outcomes.taken()
    if taken:
        lines.insert(1, f"  tests gone that the gate did not deselect: {taken}")
    if code == 0 and not failures and not outcomes.missing() and outcomes.of("passed"):
        return True, "\n".join(lines), junit, len(outcomes.of("xfailed")), outcomes.exercised(), taken
    if not failures:
        why = "no test passed" if code == 0 and not outcomes.missing() else f"pytest exit {code} ({MEANING.get(code, 'unexpected')})"
        lines[0] += f"; {why}: the suite did not run to a verdict"
        return False, "\n".join(lines), junit, 0, frozenset(), ""
    for node in failures[:25]:
        lines.append(f"  FAILED {node}\n         {short(outcomes.tests[node].get('detail', ''))}")
    if len(failures) > 25:
        lines.append(f"  ... and {len(failures) - 25} more (see the pytest output above)")
    if set(failures) == set(outcomes.listed_passes()):  # nothing answered wrongly: no call sequence to look for
        lines.append("  every failure is a listed test that passed: no call answered wrongly, so there is no transcript to record")
        return False, "\n".join(lines), junit, 0, frozenset(), ""
    path, what = evidence(config, failures, outcomes, transcript_out)
    if path is None:
        lines.append(f"  {failures[0]} passed when run again (flaky, or it needs the tests before it): no transcript")
        return False, "\n".join(lines), junit, 0, frozenset(), ""
    lines.append(f"  {what}: {path} ({len(read(path).steps)} requests)")
    lines.append(f"  replay it alone: {prog} --replay {path} --impl '{impl}'")
    lines += explain(path, impl, config.profile, config.driver_timeout)
    return False, "\n".join(lines), junit, 0, frozenset(), ""
