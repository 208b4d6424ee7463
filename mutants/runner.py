"""The planted-mutant runner: `python -m mutants [--json PATH] [--threshold X] [-j N] [-- PYTEST_ARGS...]`.

1. Snapshot the repo (paged/, oracle/, tests/, pyproject.toml and the rest, never .git or
   mutants/) into a temporary folder.
2. Run the selected tests on the unmutated snapshot: they must pass, else stop (exit 2).
3. For each mutant, copy the snapshot, plant the mutant in the copy and run pytest there
   with `-x -p no:cacheprovider -n 0`, HYPOTHESIS_PROFILE=mutation, PYTHONPATH and the
   working folder set to the copy. A small plugin checks, inside that very pytest process,
   that `import paged` found the mutated copy; a mismatch is an error.
4. Verdicts: pytest exit 1 with a failed test in its JUnit XML is `killed` (by the first
   failed test); exit 0 is `survived`; anything else (a stale mutant, exit codes 2 to 5, a
   timeout, a wrong `paged`) is `error`, never a kill.

Exit status: 0 when killed/total >= threshold and nothing is an error; 1 otherwise;
2 when the unmutated run fails or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from . import Mutant, StaleMutant, all_mutants, apply_mutant

REPO = Path(__file__).resolve().parent.parent
PYTEST_FLAGS = ["-x", "-p", "no:cacheprovider", "-n", "0", "-q", "--no-header", "-p", "_mutant_guard"]
GUARD_FILE = "_mutant_guard.py"
GUARD_REPORT = "guard-report.txt"
FIRST_FAILURE = "first-failure.txt"

# The plugin each run loads (-p _mutant_guard). It proves, inside pytest, that the module
# under test is the copy's `paged` (the mutated one), not the work tree's or an install's.
GUARD_SOURCE = '''\
"""Written by mutants/runner.py: fail the run unless `paged` is imported from this copy."""
import os
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    import paged

    want = Path(os.environ["MUTANTS_EXPECT_PAGED"]).resolve()
    got = Path(paged.__file__).resolve().parent
    impl = os.environ.get("PAGED_IMPL", "paged")
    report = Path(os.environ["MUTANTS_GUARD_REPORT"])
    if got != want or impl != "paged":
        report.write_text(f"MISMATCH {got} impl={impl}\\n")
        raise pytest.UsageError(
            f"mutants: the run imports paged from {got} (impl {impl!r}), expected {want} (impl 'paged')"
        )
    report.write_text(f"OK {got}\\n")


def pytest_runtest_logreport(report):
    # The first test that fails (in setup, call or teardown), by its pytest node id.
    first = Path(os.environ["MUTANTS_FIRST_FAILURE"])
    if report.failed and not first.exists():
        first.write_text(report.nodeid)
'''

IGNORE = shutil.ignore_patterns(
    ".git", "mutants", "__pycache__", ".hypothesis", ".mypy_cache", ".pytest_cache", "*.egg-info",
    "venv", ".venv", "build", "dist", ".ci", "*.pyc",
)


@dataclass
class Result:
    id: str
    title: str
    status: str  # killed, survived, error
    killed_by: str | None
    seconds: float
    detail: str = ""


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        cut = argv.index("--")
        own, pytest_args = argv[:cut], argv[cut + 1 :]
    else:
        own, pytest_args = argv, []
    parser = argparse.ArgumentParser(
        prog="python -m mutants",
        description="Score the test suite against the seed's planted bugs s01..s13. "
        "Arguments after -- select the tests (for example: -- -m stateful).",
    )
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    parser.add_argument("--threshold", type=float, default=0.80, help="minimum kill rate (default 0.80)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: cores)")
    parser.add_argument("--only", metavar="IDS", help="comma-separated mutant ids to run (for example s06,s07)")
    parser.add_argument(
        "--expected",
        action="store_true",
        help="run each mutant against only the catalog tests the seed says catch it (its caught_by)",
    )
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per mutant run (default: 10x the clean run, at least 60)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies and print where they are")
    args = parser.parse_args(own)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    if not 0.0 <= args.threshold <= 1.0:
        parser.error("--threshold must be between 0 and 1")
    return args, pytest_args


def snapshot(dest: Path) -> None:
    """Copy the repo (without .git, mutants/ or caches) to dest, plus the guard plugin."""
    shutil.copytree(REPO, dest, ignore=IGNORE, symlinks=True)
    (dest / GUARD_FILE).write_text(GUARD_SOURCE, encoding="utf-8")


def run_pytest(root: Path, pytest_args: list[str], timeout: float | None, extra_flags: list[str] | None = None) -> tuple[int | None, str, Path, float]:
    """Run pytest in the copy at root; return (exit code or None on timeout, output tail, junit path, seconds)."""
    junit = root / "junit.xml"
    report = root / GUARD_REPORT
    first = root / FIRST_FAILURE
    for stale in (junit, report, first):
        stale.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(root),
        HYPOTHESIS_PROFILE="mutation",
        PAGED_IMPL="paged",
        PYTHONDONTWRITEBYTECODE="1",
        MUTANTS_EXPECT_PAGED=str(root / "paged"),
        MUTANTS_GUARD_REPORT=str(report),
        MUTANTS_FIRST_FAILURE=str(first),
    )
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("CI", None)  # the profile is set explicitly; CI would only pick the ci profile
    cmd = [sys.executable, "-m", "pytest", *PYTEST_FLAGS, *(extra_flags or []), f"--junitxml={junit}", *pytest_args]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout
        )
        code: int | None = proc.returncode
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        code = None
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    return code, out, junit, time.monotonic() - start


def guard_ok(root: Path) -> str | None:
    """None when the guard ran and saw the copy's paged; else what went wrong."""
    report = root / GUARD_REPORT
    if not report.exists():
        return "the guard plugin did not run, so which paged was tested is unknown"
    text = report.read_text().strip()
    return None if text.startswith("OK ") else f"guard: {text}"


def first_failure(root: Path, junit: Path) -> str | None:
    """The node id of the first test that failed, as the guard plugin recorded it; None when no
    test failed. The JUnit XML must agree that some test failed or errored."""
    recorded = root / FIRST_FAILURE
    if not junit.exists():
        return None
    try:
        cases = list(ET.parse(junit).iter("testcase"))
    except ET.ParseError:
        return None
    if not any(c.find("failure") is not None or c.find("error") is not None for c in cases):
        return None
    return recorded.read_text().strip() if recorded.exists() else None


def count_tests(junit: Path) -> int:
    if not junit.exists():
        return 0
    try:
        return sum(1 for _ in ET.parse(junit).iter("testcase"))
    except ET.ParseError:
        return 0


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_mutant(mutant: Mutant, base: Path, work: Path, pytest_args: list[str], timeout: float, expected: bool) -> Result:
    start = time.monotonic()
    root = work / mutant.id
    shutil.copytree(base, root, symlinks=True)
    try:
        apply_mutant(mutant, root)
    except StaleMutant as exc:
        return Result(mutant.id, mutant.title, "error", None, time.monotonic() - start, str(exc))
    args = list(pytest_args)
    if expected:
        args += ["-k", " or ".join(mutant.caught_by)]
    code, out, junit, _ = run_pytest(root, args, timeout)
    seconds = time.monotonic() - start
    problem = guard_ok(root)
    if code is None:
        return Result(mutant.id, mutant.title, "error", None, seconds, f"timed out after {timeout:.0f} s")
    if problem:
        return Result(mutant.id, mutant.title, "error", None, seconds, f"{problem}\n{tail(out)}")
    if code == 0:
        return Result(mutant.id, mutant.title, "survived", None, seconds)
    if code == 1:
        failed = first_failure(root, junit)
        if failed:
            return Result(mutant.id, mutant.title, "killed", failed, seconds)
        return Result(mutant.id, mutant.title, "error", None, seconds, f"pytest exit 1 but no failed test\n{tail(out)}")
    meaning = {2: "interrupted / collection error", 3: "internal error", 4: "usage error", 5: "no tests collected"}
    return Result(
        mutant.id, mutant.title, "error", None, seconds,
        f"pytest exit {code} ({meaning.get(code, 'unexpected')})\n{tail(out)}",
    )


def print_table(results: list[Result]) -> None:
    rows = [("mutant", "bug", "verdict", "first failing test", "seconds")]
    for r in results:
        rows.append((r.id, r.title, r.status, r.killed_by or ("-" if r.status != "error" else r.detail.splitlines()[0][:70]), f"{r.seconds:.1f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(widths[i]) if i < 4 else cell.rjust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.monotonic()
    try:
        mutants = all_mutants()
    except (TypeError, ValueError, ImportError) as exc:
        print(f"mutants: cannot load the mutants: {exc}", file=sys.stderr)
        return 2
    if args.only:
        wanted = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = wanted - {m.id for m in mutants}
        if unknown:
            print(f"mutants: no such mutant: {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.id in wanted]
    selection = " ".join(pytest_args) if pytest_args else "the whole suite"
    work = Path(tempfile.mkdtemp(prefix="paged-mutants-"))
    try:
        base = work / "clean"
        snapshot(base)
        print(f"mutants: {len(mutants)} planted mutants, tests: {selection}, -j {args.jobs}", flush=True)

        # The clean run: the selected tests must pass on the unmutated snapshot.
        # With more than one job it runs under xdist; every mutant run is -n 0.
        clean_flags = ["-n", str(args.jobs)] if args.jobs > 1 else []
        code, out, junit, clean_s = run_pytest(base, pytest_args, None, clean_flags)
        problem = guard_ok(base)
        if code != 0 or problem:
            print(tail(out, 40), file=sys.stderr)
            why = problem or f"pytest exit {code}"
            print(f"mutants: ERROR: the selected tests do not pass on the unmutated code ({why}); no score.", file=sys.stderr)
            return 2
        print(f"clean run: {count_tests(junit)} tests passed in {clean_s:.1f} s (paged from the snapshot)", flush=True)

        timeout = args.timeout or max(60.0, 10.0 * clean_s * max(1, args.jobs))
        results: list[Result] = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures: dict[Future[Result], Mutant] = {
                pool.submit(run_mutant, m, base, work, pytest_args, timeout, args.expected): m for m in mutants
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    m = futures[fut]
                    try:
                        r = fut.result()
                    except Exception as exc:  # a runner bug is an error for that mutant, never a kill
                        r = Result(m.id, m.title, "error", None, 0.0, f"runner: {exc!r}")
                    results.append(r)
                    what = f"by {r.killed_by}" if r.killed_by else (r.detail.splitlines()[0] if r.detail else "")
                    print(f"[{len(results):2d}/{len(mutants)}] {r.id} {r.status:8s} {r.seconds:5.1f} s  {what}", flush=True)
    finally:
        if args.keep:
            print(f"mutants: copies kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    results.sort(key=lambda r: r.id)
    killed = sum(r.status == "killed" for r in results)
    errors = [r for r in results if r.status == "error"]
    total = len(results)
    rate = killed / total if total else 0.0
    print()
    print_table(results)
    for r in errors:
        print(f"\n{r.id} error:\n{r.detail}")
    wall = time.monotonic() - t0
    ok = rate >= args.threshold and not errors and total > 0
    print(
        f"\nscore: {killed}/{total} killed = {rate:.2f} (threshold {args.threshold:.2f}), "
        f"{len(errors)} errors, {wall:.1f} s wall -> {'PASS' if ok else 'FAIL'}"
    )
    if args.json:
        payload = {
            "mutants": [
                {"id": r.id, "title": r.title, "status": r.status, "killed_by": r.killed_by, "seconds": round(r.seconds, 2)}
                | ({"detail": r.detail} if r.detail else {})
                for r in results
            ],
            "killed": killed,
            "total": total,
            "rate": rate,
            "threshold": args.threshold,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1
