"""The planted-mutant runner: `python -m mutants [--driver | --rust] [--profile P] [--exhaustive [DEPTH]] [--json PATH] [--threshold X] [-j N] [-- PYTEST_ARGS...]`.

With `--exhaustive`, each mutant is scored by the exhaustive explorer (`python -m explorer`
to depth DEPTH, docs/EXHAUSTIVE.md) instead of the suite, and the table gives the length of the
failing call sequence it found (a shortest one when within every tree depth), with its geometry.

What is mutated and how the suite reaches it:
- default: the sNN mutants of `paged`, tested as the Python module `paged`;
- `--driver`: the same mutants, tested through the wire, `--impl=exec:python -m wire.driver`
  (nothing is lost in transit if every one is still killed);
- `--rust`: the rNN mutants of the Rust port (ci/examples/rust), each built in its copy with
  `cargo build --offline --profile mutants` (Cargo.toml: release's semantics, no optimisation; the driver and
  the vectors' test) and tested through its driver binary; then the port's own `cargo test --profile mutants
  --test vectors` (the conformance vectors, no Python, each test stopping at its first failure) is run on it too,
  and its verdict is the table's last column.

1. Snapshot the repo (paged/, oracle/, tests/, pyproject.toml and the rest, never .git or
   mutants/) into a temporary folder.
2. Collect the selected tests (default: the conformance suite, tests/) on the unmutated snapshot, writing
   the bytecode each mutant's copy starts with: collection must succeed, else stop (exit 2). (--exhaustive: the
   explorer's walk of the unmutated snapshot must pass.)
3. For each mutant, copy the snapshot, plant the mutant in the copy and run pytest there
   (mutants/pytest_run.py, shared with the engines' runner) with `-x -p no:cacheprovider -n 0`,
   HYPOTHESIS_PROFILE=mutation, PYTHONPATH and the working folder set to the copy. A guard plugin
   (mutants/guard.py) checks, inside that very pytest process, that `import paged` found the
   mutated copy (not for --rust) and that the implementation under test is the expected one; a
   mismatch is an error.
4. Verdicts: pytest exit 1 with a failed test in its JUnit XML is `killed` (by the first
   failed test); exit 0 is `survived`; anything else (a stale mutant, exit codes 2 to 5, a
   timeout, a wrong `paged`) is `error`, never a kill.
5. The confirm run: every test that killed a mutant runs once more, on the unmutated snapshot, under the same
   selection and settings, and must pass, else no score (exit 2). A kill is a failure the mutant caused, and
   only the killing tests need that proof: a test that passes on a mutant needs none, and a mutant that
   survives passed everything.

Exit status: 0 when killed/total >= threshold and nothing is an error; 1 otherwise;
2 when the unmutated snapshot's collection or confirm run fails, or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

from oracle.profile import ProfileError
from oracle.profile import parse as parse_profile  # the edge: --profile's text
from testkit.config import GIVEN, Config

from . import Mutant, StaleMutant, all_mutants, apply_mutant
from .mirror import mirror
from .fork_server import FRESH_PROCESSES_HELP, ForkServers, for_runner
from .pytest_run import Guard, PytestRun, count_tests, run_pytest, run_with_timeout, tail, verdict

REPO = Path(__file__).resolve().parent.parent
# The tests a mutant of the port meets when no selection is given: the conformance suite, the one a port is
# gated by. meta_tests/ tests the suite's own machinery (many of its tests start whole gates in subprocesses)
# and never stands between a mutant of the port and its verdict.
CONFORMANCE = ["tests"]
# A mutant's run of the suite is stopped after this long (an error, never a kill): a bound on a hang, far past the
# slowest run a mutant can make, a survivor's whole suite under -n 0 (the Rust port's, through its driver).
SUITE_TIMEOUT = 900.0
CRATE = Path("ci/examples/rust")
RUST_PROFILE = "mutants"  # ci/examples/rust/Cargo.toml
RUST_DRIVER = CRATE / "target" / RUST_PROFILE / "paged-kv-driver"
IGNORE = shutil.ignore_patterns(
    ".git", "mutants", "__pycache__", ".hypothesis", ".mypy_cache", ".pytest_cache", "*.egg-info",
    "venv", ".venv*", "build", "dist", ".ci", "*.pyc", "target",
)


@dataclass
class Result:
    id: str
    title: str
    status: str  # killed, survived, error (engines: also "not run", an expected survivor only planted)
    killed_by: str | None
    seconds: float
    detail: str = ""
    vectors: str = ""  # --rust: the port's own `cargo test --test vectors` on the mutant: killed, survived or error
    calls: int = 0  # --exhaustive: the length of the shortest failing call sequence the explorer found


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" in argv:
        cut = argv.index("--")
        own, pytest_args = argv[:cut], argv[cut + 1 :]
    else:
        own, pytest_args = argv, []
    parser = argparse.ArgumentParser(
        prog="python -m mutants",
        description="Score the test suite against the planted bugs: the seed's pitfalls s01..s13 and the "
        "bugs after them (s14.., mutants/README.md) in paged/ (default, or --driver), or the Rust port's rNN (--rust). "
        "Arguments after -- select the tests (default: the conformance suite, tests/; for example: -- -m stateful).",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--driver",
        action="store_true",
        help="test each mutated paged through the wire: --impl=exec:python -m wire.driver (shows nothing is lost in transit)",
    )
    how.add_argument(
        "--rust",
        action="store_true",
        help="the Rust port's mutants (mutants/rust): build each with cargo, test it through its driver, "
        "and run its own `cargo test --test vectors` too",
    )
    parser.add_argument(
        "--profile",
        metavar="OPTION=VALUE[,...]",
        help="test every mutant under this profile (docs/CONTRACT.md, Profiles), e.g. allocation=any",
    )
    parser.add_argument(
        "--exhaustive", nargs="?", const=6, type=int, metavar="DEPTH",
        help="score the exhaustive explorer (python -m explorer to depth DEPTH, default 6, docs/EXHAUSTIVE.md) "
        "instead of the suite; the table gives each kill's trace length",
    )
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    parser.add_argument("--threshold", type=float, default=0.80, help="minimum kill rate (default 0.80)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once (default: cores)")
    parser.add_argument("--only", metavar="IDS", help="comma-separated mutant ids to run (for example s06,s07)")
    parser.add_argument(
        "--expected",
        action="store_true",
        help="run each mutant against only the tests it names (its caught_by)",
    )
    parser.add_argument("--timeout", type=float, default=0.0, help=f"seconds per mutant run (default: {SUITE_TIMEOUT:.0f}; --exhaustive: 10x the clean walk, at least 60)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies and print where they are")
    parser.add_argument("--fresh-processes", action="store_true", help=FRESH_PROCESSES_HELP)
    args = parser.parse_args(own)
    if args.jobs < 1:
        parser.error("-j must be at least 1")
    if not 0.0 <= args.threshold <= 1.0:
        parser.error("--threshold must be between 0 and 1")
    return args, pytest_args


class Target:
    """How the suite reaches the implementation in a copy of the repo: the --impl it is given, what
    must be built first, which `paged` the guard expects (none for the Rust port), and the run's settings
    (`config`, read at the edge: its profile given by --profile or PAGED_PROFILE, else each run's own)."""

    def __init__(self, kind: str, config: Config) -> None:
        self.kind = kind  # python, driver or rust
        self.config = config

    def settings(self, root: Path) -> dict[str, str]:
        """The PAGED_* settings of a run on the copy at root (its --impl), for its environment (the edge to that process)."""
        return replace(self.config, impl=self.impl(root)).child_env({})

    def impl(self, root: Path) -> str:
        if self.kind == "rust":
            return f"exec:{root / RUST_DRIVER}"
        if self.kind == "driver":
            return f"exec:{sys.executable} -m wire.driver"
        return "paged"

    def guard(self, root: Path) -> Guard:
        """What the guard checks: the --impl, and (but for the Rust port) `paged` imported from the copy."""
        paged = () if self.kind == "rust" else ("paged",)
        return Guard(self.impl(root), imports=paged, modules=paged)

    def copy(self, base: Path, root: Path, edited: list[str]) -> None:
        """A mutant's copy of the snapshot: symlinks but for the files it edits (mutants/mirror.py), cheap to make
        and delete (the conformance vectors alone are 18 MB). What a run writes is never written through a link:
        its pytest files land in root, and no bytecode is written; the Rust port's Cargo.lock is a real copy
        and its build starts a target folder of its own, never the snapshot's."""
        crate = [str(CRATE / "Cargo.lock")] if self.kind == "rust" else []
        mirror(base, root, [*edited, *crate])
        if self.kind == "rust":
            (root / CRATE / "target").unlink(missing_ok=True)

    def build(self, root: Path, timeout: float | None) -> str | None:
        """Build what the copy needs (the Rust driver); None when it built, else why not."""
        if self.kind != "rust":
            return None
        return cargo(root, ["build", "--offline", "--profile", RUST_PROFILE, "--quiet", "--bins", "--test", "vectors"], timeout)

    def own_tests(self, root: Path, timeout: float | None) -> str:
        """--rust: the port's own `cargo test --test vectors` on the copy: killed, survived or error. Each of its
        two tests stops at its first failing transcript (PAGED_VECTORS_FIRST_FAILURE): one failure is a kill."""
        if self.kind != "rust":
            return ""
        env = replace(self.config, vectors_dir=root / "ci" / "vectors").child_env()  # PAGED_VECTORS_DIR: the copy's vectors
        env["PAGED_VECTORS_FIRST_FAILURE"] = "1"
        cmd = ["cargo", "test", "--offline", "--profile", RUST_PROFILE, "--quiet", "--test", "vectors"]
        ended = run_with_timeout(cmd, root / CRATE, env, timeout)
        if ended.code is None:
            return "killed (timeout)"
        if ended.code == 0:
            return "survived"
        return "killed" if "test result: FAILED" in ended.out else "error"


def cargo(root: Path, args: list[str], timeout: float | None) -> str | None:
    try:
        ended = run_with_timeout(["cargo", *args], root / CRATE, None, timeout)
    except FileNotFoundError:
        return "cargo is not installed (the Rust toolchain is needed for --rust)"
    if ended.code is None:
        return f"cargo {args[0]} timed out"
    return None if ended.code == 0 else f"cargo {' '.join(args)} failed:\n{tail(ended.out)}"


def snapshot(dest: Path) -> None:
    """Copy the repo (without .git, mutants/, build outputs or caches) to dest."""
    shutil.copytree(REPO, dest, ignore=IGNORE, symlinks=True)


def suite_run(
    root: Path, target: Target, pytest_args: list[str], timeout: float | None, servers: ForkServers | None,
    workers: int = 0, clean: bool = False, only: tuple[str, ...] = (),
) -> PytestRun:
    """The suite on the copy at root, run there with only the copy on PYTHONPATH; on the unmutated snapshot
    (`clean`) it writes the bytecode each mutant's copy of root starts with. `only`: just these node ids."""
    expect = replace(target.guard(root), only=only)
    return run_pytest(root, expect, pytest_args, pythonpath=[root], cwd=root, workers=workers, env=target.settings(root), timeout=timeout,
                      write_bytecode=clean, servers=servers)


def run_explorer(root: Path, target: Target, depth: int, timeout: float | None) -> tuple[int | None, str, dict[str, object], float]:
    """Run the exhaustive explorer in the copy at root: (exit code or None on timeout, output tail, its JSON, seconds)."""
    out_json = root / "explore.json"
    out_json.unlink(missing_ok=True)
    impl = target.impl(root)
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", **target.settings(root))
    given = [f"--profile={target.config.profile.describe()}"] if target.config.profile_source in GIVEN else []  # text: the edge to its process
    cmd = [sys.executable, "-m", "explorer", f"--impl={impl}", "--depth", str(depth), "--quiet", "--json", str(out_json),
           "--transcript-out", str(root / "explore-transcript.txt"), *given]
    ended = run_with_timeout(cmd, root, env, timeout)
    try:
        payload = json.loads(out_json.read_text()) if out_json.exists() else {}
    except ValueError:
        payload = {}
    return ended.code, ended.out, payload, ended.seconds


def explorer_verdict(code: int | None, out: str, payload: dict[str, object], root: Path, target: Target, timeout: float | None) -> tuple[str, str | None, str, int]:
    """(status, what killed it, detail, trace length) of one explorer run."""
    if code is None:
        return "error", None, f"timed out after {timeout:.0f} s", 0
    module_file = str(payload.get("module_file") or "")
    if target.kind == "python" and payload and not module_file.startswith(str(root / "paged")):
        return "error", None, f"the explorer imported paged from {module_file!r}, not the copy", 0
    results = payload.get("results")
    failures = [r["failure"] for r in results if isinstance(r, dict) and r.get("failure")] if isinstance(results, list) else []
    if code == 0 and not failures:
        return "survived", None, "", 0
    if code == 1 and failures:
        f = failures[0]
        return "killed", f"explorer: {'; '.join(f['path'])} [{f.get('geometry', '?')}]", str(f["what"]), int(f["calls"])
    return "error", None, f"explorer exit {code}\n{tail(out)}", 0


def run_mutant(
    mutant: Mutant, base: Path, work: Path, target: Target, pytest_args: list[str], timeout: float, expected: bool,
    exhaustive: int | None, servers: ForkServers | None,
) -> Result:
    start = time.monotonic()
    root = work / mutant.id
    target.copy(base, root, [edit.file for edit in mutant.edits])
    try:
        apply_mutant(mutant, root)
    except StaleMutant as exc:
        return Result(mutant.id, mutant.title, "error", None, time.monotonic() - start, str(exc))
    problem = target.build(root, timeout)
    if problem:
        return Result(mutant.id, mutant.title, "error", None, time.monotonic() - start, f"does not build: {problem}")
    if exhaustive is not None:
        code, out, payload, _ = run_explorer(root, target, exhaustive, timeout)
        status, by, detail, calls = explorer_verdict(code, out, payload, root, target, timeout)
        return Result(mutant.id, mutant.title, status, by, time.monotonic() - start, detail, "", calls)
    vectors = target.own_tests(root, timeout)
    args = list(pytest_args)
    if expected:
        args += ["-k", " or ".join(mutant.caught_by)]
    status, by, detail = verdict(suite_run(root, target, args, timeout, servers), timeout)
    return Result(mutant.id, mutant.title, status, by, time.monotonic() - start, detail, vectors)


def confirmed(base: Path, target: Target, pytest_args: list[str], results: list[Result], workers: int, servers: ForkServers | None) -> bool:
    """The confirm run: the tests that killed a mutant, run on the unmutated snapshot under the same selection and
    settings (the guard keeps just them), must all pass. Prints what it ran; False (no score) when one fails."""
    killers = sorted({r.killed_by for r in results if r.status == "killed" and r.killed_by})
    if not killers:
        return True
    run = suite_run(base, target, pytest_args, None, servers, workers, only=tuple(killers))
    status, by, detail = verdict(run, None)
    passed = count_tests(run, passed=True)
    if status != "survived" or passed != len(killers):
        print(tail(run.ended.out, 40), file=sys.stderr)
        why = f"{by} failed" if by else (detail.splitlines() or [f"{passed} of {len(killers)} tests passed"])[0]
        print(f"mutants: ERROR: a test that killed a mutant does not pass on the unmutated code ({why}); no score.", file=sys.stderr)
        return False
    print(f"confirm run: the {len(killers)} tests that killed a mutant pass on the unmutated code ({run.ended.seconds:.1f} s)", flush=True)
    return True


def print_table(results: list[Result], rust: bool, exhaustive: bool = False) -> None:
    if exhaustive:
        header = ["mutant", "bug", "verdict", "seconds", "calls", "shortest failing sequence"]
        rows = [tuple(header)]
        for r in results:
            first = (r.killed_by or "").removeprefix("explorer: ") or ("-" if r.status != "error" else r.detail.splitlines()[0][:70])
            rows.append((r.id, r.title[:48], r.status, f"{r.seconds:.1f}", str(r.calls or "-"), first[:150]))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for n, row in enumerate(rows):
            print("  ".join(cell.rjust(widths[i]) if i in (3, 4) else cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
            if n == 0:
                print("  ".join("-" * w for w in widths))
        return
    header = ["mutant", "bug", "verdict", "first failing test", "seconds"] + (["cargo test (vectors)"] if rust else [])
    rows = [tuple(header)]
    for r in results:
        first = r.killed_by or ("-" if r.status != "error" else r.detail.splitlines()[0][:70])
        rows.append((r.id, r.title, r.status, first, f"{r.seconds:.1f}") + ((r.vectors,) if rust else ()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print("  ".join(cell.rjust(widths[i]) if i == 4 else cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = parse_args(sys.argv[1:] if argv is None else argv)
    try:  # the edge: the settings read once; every run it starts is handed them (Target.settings)
        config = Config.from_env()
    except ProfileError as exc:
        print(f"mutants: PAGED_PROFILE: {exc}", file=sys.stderr)
        return 2
    if args.profile is not None:
        try:
            config = config.given(parse_profile(args.profile))
        except ProfileError as exc:
            print(f"mutants: --profile: {exc}", file=sys.stderr)
            return 2
        print(f"profile: {config.profile.describe()}")
    t0 = time.monotonic()
    kind = "rust" if args.rust else "driver" if args.driver else "python"
    target = Target(kind, config)
    try:
        mutants = all_mutants("rust" if args.rust else "python")
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
    selection = " ".join(pytest_args) if pytest_args else "the conformance suite (tests/)"
    pytest_args = pytest_args or list(CONFORMANCE)
    work = Path(tempfile.mkdtemp(prefix="paged-mutants-"))
    servers = for_runner(args.fresh_processes)
    try:
        base = work / "clean"
        snapshot(base)
        print(f"mutants: {len(mutants)} planted mutants ({kind}: --impl={target.impl(base)}), tests: {selection}, -j {args.jobs}", flush=True)

        # The unmutated snapshot must build and pass its own vectors (--rust), and its tests must collect (or its
        # walk pass: --exhaustive); the collection writes the bytecode every mutant's copy starts with.
        problem = target.build(base, None)
        vectors = target.own_tests(base, None)
        if problem or vectors not in ("", "survived"):
            print(f"mutants: ERROR: the unmutated port does not build or fails its own tests ({problem or vectors}); no score.", file=sys.stderr)
            return 2
        workers = args.jobs if args.jobs > 1 else 0
        if args.exhaustive is not None:
            code, out, payload, clean_s = run_explorer(base, target, args.exhaustive, None)
            status, by, detail, _ = explorer_verdict(code, out, payload, base, target, None)
        else:
            collected = suite_run(base, target, [*pytest_args, "--collect-only"], None, servers, clean=True)
            status, by, detail = verdict(collected, None)
            out, clean_s = collected.ended.out, collected.ended.seconds
        if status != "survived":
            print(tail(out, 40), file=sys.stderr)
            why = f"{by} failed" if by else detail.splitlines()[0]
            print(f"mutants: ERROR: the selected tests do not {'pass' if args.exhaustive is not None else 'collect'} on the unmutated code ({why}); no score.", file=sys.stderr)
            return 2
        if args.exhaustive is not None:
            print(f"clean run: the explorer passed (depth {args.exhaustive}) in {clean_s:.1f} s", flush=True)
            timeout = args.timeout or max(60.0, 10.0 * clean_s * max(1, args.jobs))
        else:
            print(f"unmutated snapshot: {tail(out, 1)}", flush=True)
            timeout = args.timeout or SUITE_TIMEOUT
        results: list[Result] = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures: dict[Future[Result], Mutant] = {
                pool.submit(run_mutant, m, base, work, target, pytest_args, timeout, args.expected, args.exhaustive, servers): m for m in mutants
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
                    own = f"  [cargo test vectors: {r.vectors}]" if r.vectors else ""
                    print(f"[{len(results):2d}/{len(mutants)}] {r.id} {r.status:8s} {r.seconds:5.1f} s  {what}{own}", flush=True)
        if args.exhaustive is None and not confirmed(base, target, pytest_args, results, workers, servers):
            return 2
    finally:
        if servers is not None:
            servers.stop()
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
    print_table(results, args.rust, args.exhaustive is not None)
    for r in errors:
        print(f"\n{r.id} error:\n{r.detail}")
    wall = time.monotonic() - t0
    ok = rate >= args.threshold and not errors and total > 0
    print(
        f"\nscore ({kind}): {killed}/{total} killed = {rate:.2f} (threshold {args.threshold:.2f}), "
        f"{len(errors)} errors, {wall:.1f} s wall -> {'PASS' if ok else 'FAIL'}"
    )
    if args.rust:
        seen = sum(r.vectors.startswith("killed") for r in results)
        blind = [r.id for r in results if not r.vectors.startswith("killed")]
        print(f"cargo test --test vectors (the port's own runner, no Python): {seen}/{total} killed" + (f"; not seen: {', '.join(blind)}" if blind else ""))
    if args.json:
        payload = {
            "kind": kind,
            "mutants": [
                {"id": r.id, "title": r.title, "status": r.status, "killed_by": r.killed_by, "seconds": round(r.seconds, 2)}
                | ({"detail": r.detail} if r.detail else {})
                | ({"cargo_test_vectors": r.vectors} if r.vectors else {})
                | ({"calls": r.calls} if r.calls else {})
                for r in results
            ],
            "killed": killed,
            "total": total,
            "rate": rate,
            "threshold": args.threshold,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1
