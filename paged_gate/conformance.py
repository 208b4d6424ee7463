"""The conformance suite (`pytest --impl=...`, run from the suite's folder) in two passes, so that a
broken implementation gets its verdict quickly.

The first pass has Hypothesis's shrinking off (every failing test stops at its first failing
example), runs the cheap broad tests first and stops after `maxfail` failures. If something failed,
the transcript that shows it is found (`evidence`): the exhaustive explorer's shortest failing call
sequence (within PAGED_EXPLORE_SECONDS, default 30); else a failing state machine's calls, shrunk
(for at most PAGED_SHRINK_SECONDS, default 20), else the general CacheMachine's; if no machine fails,
a failing vector's file, else the first failing test's calls.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from wire.transcript import read

from paged_gate.exhaustive import explored
from paged_gate.locate import suite_root, vectors_dir
from paged_gate.transcripts import OTHER_PROFILE, explain, keep
from paged_gate.verdict import short
from oracle.profile import Profile

PYTHON_SURFACE = "Python surface"  # the start of conftest's skip reason for a driver
MACHINE = "tests/test_stateful.py::TestCacheMachine::runTest"  # the general machine: its failures shrink to a minimal sequence
KINDS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
MEANING = {2: "interrupted or collection error", 3: "pytest internal error", 4: "usage error", 5: "no tests collected"}


def banner(text: str) -> None:
    print(f"\n=== gate: {text} ===", flush=True)


def pytest(impl: str, args: list[str], profile: str, env_extra: dict[str, str] | None = None) -> int:
    """Run pytest in the suite's folder with its own configuration; its exit code."""
    root = suite_root()
    env = dict(os.environ, HYPOTHESIS_PROFILE=profile, PAGED_IMPL=impl, **(env_extra or {}))
    env.pop("CI", None)
    # `--impl=X`, never `--impl X`: pytest pre-parses before conftest adds --impl, and a bare
    # `paged` that names a folder here would be taken as the test path. -c and --rootdir: the suite's
    # pyproject.toml, never one found above an installed copy.
    config = ["-c", str(root / "pyproject.toml"), f"--rootdir={root}"]
    flags = ["-p", "no:cacheprovider", f"--impl={impl}", *args]
    print(f"$ HYPOTHESIS_PROFILE={profile} pytest {' '.join(a if ' ' not in a else repr(a) for a in flags)}   (in {root})", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", *config, *flags], cwd=root, env=env)


@dataclass
class Outcomes:
    """Each test's outcome as conftest's --outcomes writes it: node id -> {outcome, detail}."""

    tests: dict[str, dict[str, str]]

    def of(self, kind: str) -> list[str]:
        return [n for n, o in self.tests.items() if o["outcome"] == kind]

    def skipped_for(self, reason_start: str) -> list[str]:
        return [n for n in self.of("skipped") if self.tests[n].get("detail", "").removeprefix("Skipped: ").startswith(reason_start)]

    def failures(self) -> list[str]:
        return self.of("failed") + self.of("error")

    def summary(self, xfails: str | None, maxfail: int) -> list[str]:
        """The counts, then tests that now pass though listed in xfails, and skips of an unexpected kind."""
        skipped, surface, others = self.of("skipped"), self.skipped_for(PYTHON_SURFACE), self.skipped_for(OTHER_PROFILE)
        failures = self.failures()
        head = (
            f"{len(self.tests)} tests run: {len(self.of('passed'))} passed, {len(failures)} failed, {len(skipped)} skipped "
            f"({len(surface)} Python surface, {len(others)} vector files for other profile values, "
            f"{len(skipped) - len(surface) - len(others)} other)"
        )
        if xfails:
            head += f", {len(self.of('xfailed'))} failed as listed in {xfails}"
        if maxfail and len(failures) >= maxfail:
            head += f"; stopped after {maxfail} failures (--all-failures runs every test)"
        lines = [head, *(f"  NOW PASSES (take it off {xfails}): {n}" for n in self.of("xpassed"))]
        lines += [f"  skipped {n}: {self.tests[n].get('detail', '')[:120]}" for n in skipped if n not in surface and n not in others]
        return lines


def read_outcomes(path: Path) -> Outcomes:
    try:
        return Outcomes(json.loads(path.read_text()))
    except (OSError, ValueError):
        return Outcomes({})


def record(impl: str, test: str, transcript_out: Path) -> Path | None:
    """Run one test again, shrinking (for at most PAGED_SHRINK_SECONDS) and recording its calls; the
    transcript, or None when it passed."""
    banner(f"recording {test}" + (" (shrunk)" if "test_stateful" in test or "test_prefix" in test else ""))
    transcript_out.unlink(missing_ok=True)
    shrink = os.environ.get("PAGED_SHRINK_SECONDS", "20")
    pytest(impl, ["-n", "0", "-q", f"--transcript={transcript_out.resolve()}", test], "gate-shrink", {"PAGED_SHRINK_SECONDS": shrink})
    return transcript_out.resolve() if transcript_out.exists() else None


def evidence(impl: str, failures: list[str], ran: set[str], transcript_out: Path, profile: Profile) -> tuple[Path | None, str]:
    """The transcript that shows the failure (always at transcript_out), and what it is."""
    banner("the exhaustive explorer, for a shortest failing call sequence")
    try:
        ok, detail, path, _ = explored(impl, 6, transcript_out, float(os.environ.get("PAGED_EXPLORE_SECONDS", "30")), str(profile))
    except Exception as exc:  # noqa: BLE001 - the explorer is a better transcript when it works, never the verdict
        print(f"  the explorer could not run: {type(exc).__name__}: {exc}")
        ok, detail, path = True, "", None
    if not ok and path is not None:
        found = [line.strip() for line in detail.splitlines() if line.strip().startswith(("shortest failing", "failing sequence", "what differs"))]
        return path, "the exhaustive explorer's " + "\n  ".join(found)
    machines = [n for n in failures if "::Test" in n and "Machine" in n]
    for test in machines or ([MACHINE] if MACHINE not in ran else []):
        path = record(impl, test, transcript_out)
        if path is not None:
            return path, f"the calls of {test}, shrunk"
    for node in failures:
        if "test_vectors.py::test_vector[" in node or "test_widths.py::test_vector[" in node:
            name = node.split("[", 1)[1].rstrip("]")
            return keep(vectors_dir() / f"{name}.txt", transcript_out), f"the failing vector {name}"
    return record(impl, failures[0], transcript_out), f"the calls of {failures[0]}"


def conformance(
    impl: str, profile: Profile, *, xfails: str | None, extra: list[str], transcript_out: Path, work: Path, maxfail: int, prog: str
) -> tuple[bool, str, Path]:
    """(passed, the verdict's lines, pytest's JUnit XML of the first pass)."""
    outcomes_path, junit = work / "outcomes.json", work / "conformance-junit.xml"
    outcomes_path.unlink(missing_ok=True)
    args = ["-n", "auto", f"--outcomes={outcomes_path}", f"--junitxml={junit}", *([f"--maxfail={maxfail}"] if maxfail else [])]
    code = pytest(impl, [*args, *([f"--xfails={xfails}"] if xfails else []), *extra], "gate")
    outcomes = read_outcomes(outcomes_path)
    failures = outcomes.failures()
    lines = outcomes.summary(xfails, maxfail)
    if code == 0 and not failures:
        return True, "\n".join(lines), junit
    if not failures:
        return False, f"pytest exit {code} ({MEANING.get(code, 'unexpected')}): the suite did not run to a verdict", junit
    for node in failures[:25]:
        lines.append(f"  FAILED {node}\n         {short(outcomes.tests[node].get('detail', ''))}")
    if len(failures) > 25:
        lines.append(f"  ... and {len(failures) - 25} more (see the pytest output above)")
    path, what = evidence(impl, failures, set(outcomes.tests), transcript_out, profile)
    if path is None:
        lines.append(f"  {failures[0]} passed when run again (flaky, or it needs the tests before it): no transcript")
        return False, "\n".join(lines), junit
    lines.append(f"  {what}: {path} ({len(read(path).steps)} requests)")
    lines.append(f"  replay it alone: {prog} --replay {path} --impl '{impl}'")
    lines += explain(path, impl, profile)
    return False, "\n".join(lines), junit
