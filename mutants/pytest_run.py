"""One run of the suite on a mutant, in a subprocess with a timeout, and its verdict.

Both mutant runners use it: mutants/runner.py (a copy of this repository with `paged` or the Rust
port mutated) and mutants/engines/runner.py (a mirror of an installed engine with one of its
files mutated). What differs is passed in: the mutant's folder, what goes on PYTHONPATH, the
working folder, and what the guard plugin (mutants/guard.py) must see.

Verdicts: pytest exit 1 with a failed test (in the JUnit XML, the first one as the guard recorded
it) is `killed`; exit 0 is `survived`; anything else (a timeout, exit codes 2 to 5, a guard that
did not run or saw the wrong code) is `error`, never a kill.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import guard
from .fork_server import ForkServers

GUARD = "_mutant_guard"
JUNIT = "junit.xml"
OUTPUT = "pytest-output.txt"  # a run's stdout and stderr, when a fork server starts it
PYTEST_EXITS = {2: "interrupted / collection error", 3: "internal error", 4: "usage error", 5: "no tests collected"}


@dataclass(frozen=True)
class Ended:
    """How a subprocess ended: its exit code (None: killed at the timeout), its output, its time."""

    code: int | None
    out: str
    seconds: float


def run_with_timeout(cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None, timeout: float | None) -> Ended:
    """Run cmd, stdout and stderr together, killed after timeout seconds (None: no limit)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        code: int | None = proc.returncode
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        code = None
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    return Ended(code, out, time.monotonic() - start)


@dataclass(frozen=True)
class Guard:
    """What the guard plugin checks in the pytest process: its --impl, and that each of `modules`
    was imported from the mutant's folder, after importing `imports`."""

    impl: str
    imports: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    only: tuple[str, ...] = ()  # node ids: the run keeps just these tests (none: every selected test)


@dataclass(frozen=True)
class PytestRun:
    root: Path  # the mutant's folder: the guard, its report and the JUnit XML are there
    ended: Ended

    @property
    def junit(self) -> Path:
        return self.root / JUNIT


def run_pytest(
    root: Path,
    expect: Guard,
    tests: Sequence[str],
    *,
    pythonpath: Sequence[Path],
    cwd: Path,
    workers: int = 0,
    flags: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout: float | None,
    write_bytecode: bool = False,
    servers: ForkServers | None = None,
) -> PytestRun:
    """Run `pytest -x` on the tests with the guard written into root, under the `mutation` Hypothesis profile
    (or the one `env` names). A mutant's run never writes bytecode; a clean run may (`write_bytecode`), so that
    the mutants' copies of its folder start with the unedited modules compiled and their tests rewritten.
    `servers`: the run is forked by one of them (mutants/fork_server.py), else it is a new interpreter."""
    # Removed first: stale ones (a copy holds the clean run's); were one a link, the write would not go through it.
    for stale in (f"{GUARD}.py", f"{GUARD}.json", JUNIT, OUTPUT, guard.REPORT.name, guard.FIRST_FAILURE.name):
        (root / stale).unlink(missing_ok=True)
    shutil.copyfile(guard.__file__, root / f"{GUARD}.py")
    (root / f"{GUARD}.json").write_text(
        json.dumps({"impl": expect.impl, "import": list(expect.imports), "modules": list(expect.modules), "only": list(expect.only)}),
        encoding="utf-8",
    )
    environment = dict(os.environ)
    environment.update(
        PYTHONPATH=os.pathsep.join(str(p) for p in pythonpath),
        HYPOTHESIS_PROFILE="mutation",
        PAGED_IMPL=expect.impl,
        PYTHONDONTWRITEBYTECODE="1",
    )
    if write_bytecode:
        del environment["PYTHONDONTWRITEBYTECODE"]
    environment.update(env or {})
    environment.pop("PYTEST_ADDOPTS", None)
    environment.pop("CI", None)  # the profile is set explicitly; CI would only pick the ci profile
    args = [
        "-x", "-p", "no:cacheprovider", "-n", str(workers), "-q", "--no-header",
        "-p", GUARD, f"--impl={expect.impl}", f"--junitxml={root / JUNIT}", *flags, *tests,
    ]
    if servers is None:
        return PytestRun(root, run_with_timeout([sys.executable, "-m", "pytest", *args], cwd, environment, timeout))
    start = time.monotonic()
    code, out = servers.run(args, cwd, environment, root / OUTPUT, timeout)
    return PytestRun(root, Ended(code, out, time.monotonic() - start))


def verdict(run: PytestRun, timeout: float | None) -> tuple[str, str | None, str]:
    """(status, first failing test, detail) of one run: killed, survived or error."""
    code, out = run.ended.code, run.ended.out
    if code is None:
        return "error", None, f"timed out after {timeout or 0:.0f} s"
    report = run.root / guard.REPORT.name
    if not report.exists():
        return "error", None, f"the guard plugin did not run, so what was tested is unknown\n{tail(out)}"
    seen = report.read_text(encoding="utf-8").strip()
    if seen != "OK":
        return "error", None, f"guard: {seen}\n{tail(out)}"
    if code == 0:
        return "survived", None, ""
    if code == 1:
        failed = first_failure(run)
        return ("killed", failed, "") if failed else ("error", None, f"pytest exit 1 but no failed test\n{tail(out)}")
    return "error", None, f"pytest exit {code} ({PYTEST_EXITS.get(code, 'unexpected')})\n{tail(out)}"


def first_failure(run: PytestRun) -> str | None:
    """The node id of the first test that failed, as the guard recorded it; None when no test failed.
    The JUnit XML must agree that some test failed or errored."""
    recorded = run.root / guard.FIRST_FAILURE.name
    if not run.junit.exists():
        return None
    try:
        cases = list(ET.parse(run.junit).iter("testcase"))
    except ET.ParseError:
        return None
    if not any(c.find("failure") is not None or c.find("error") is not None for c in cases):
        return None
    return recorded.read_text(encoding="utf-8").strip() if recorded.exists() else None


def count_tests(run: PytestRun, passed: bool = False) -> int:
    """The test cases in the run's JUnit XML (`passed`: only those that neither failed, errored nor skipped)."""
    if not run.junit.exists():
        return 0
    try:
        cases = list(ET.parse(run.junit).iter("testcase"))
    except ET.ParseError:
        return 0
    return sum(1 for c in cases if not passed or all(c.find(tag) is None for tag in ("failure", "error", "skipped")))


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
