"""`paged-gate` (or `ci/gate` in a checkout): the arguments, and the steps they select.

    paged-gate                                  # our own paged: conformance suite (+ planted mutants in a checkout)
    paged-gate --impl MODULE                    # a Python implementation (exports PagedKVCache, OutOfBlocks)
    paged-gate --impl 'exec:CMD'                # a driver in any language, speaking docs/PROTOCOL.md
    paged-gate --impl ... --xfails FILE         # a port in progress: listed failures do not fail the gate
    paged-gate --impl ... --vectors             # replay the conformance vectors (ci/vectors) only
    paged-gate --impl ... --replay FILE         # replay one transcript (a vector, or a failure the gate wrote)
    paged-gate --impl ... --profile allocation=any   # the port's profile (docs/CONTRACT.md, Profiles), if it declares none
    paged-gate --impl ... --exhaustive [--depth K]   # every call sequence of <= K calls (default 6) on tiny pools
    paged-gate --impl ... --junit-xml PATH      # every test as JUnit XML, for a CI system
    paged-gate --impl ... --coverage            # ... and what each state machine's examples reached
    paged-gate --mutmut                         # ... and the mutmut score (ci/mutation; a checkout only; slow)

A failure's calls are written as a transcript to --transcript-out (default: transcript.txt in a new
temporary folder, so no stale file from an earlier run can pass for it; a file at --transcript-out
is deleted before the steps run). For a driver, the Python-surface tests are skipped with
CONTRACT.md's reason and counted apart, as are tests needing a capability the driver does not
announce. The suite follows the port's profile (a module's PROFILE, a driver's hello; --profile
overrides both). Exit 0 when every step passed, 1 when a step failed, 2 when the gate could not run.
Arguments after `--` go to the conformance pytest run, which runs in the suite's folder (test paths
such as tests/test_catalog.py are relative to it).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from oracle.profile import Profile, ProfileError
from oracle.profile import parse as parse_profile
from wire.client import DriverError

from paged_gate import coverage, junit
from paged_gate.conformance import banner, conformance
from paged_gate.exhaustive import explored
from paged_gate.locate import checkout, scripts_first, vector_files
from paged_gate.target import declared, unreachable
from paged_gate.transcripts import keep, replay_files
from paged_gate.verdict import Step, passed, render


SUITE_NEEDS = ("pytest", "hypothesis", "xdist")  # what the conformance suite imports beyond the package's own dependencies


@dataclass
class Options:
    """The parsed command line; `extra` is what follows `--`, for pytest."""

    impl: str
    xfails: str | None
    replay: str | None
    vectors: bool
    transcript_out: str | None
    all_failures: bool
    mutmut: bool
    profile: str | None
    exhaustive: bool
    depth: int
    junit_xml: str | None
    coverage: bool
    extra: list[str]

    @property
    def runs_suite(self) -> bool:
        """The conformance suite (pytest) is a step: neither --vectors, --replay nor --exhaustive."""
        return not (self.replay or self.vectors or self.exhaustive)

    @property
    def ours(self) -> bool:
        """Our own paged, gated whole: the planted mutants too."""
        return self.impl == "paged" and self.runs_suite


def parser(prog: str) -> argparse.ArgumentParser:
    usage = (__doc__ or "").split("\n\n", 1)[1].replace("paged-gate", prog)
    p = argparse.ArgumentParser(
        prog=prog, description="The gate a port's CI calls: one command, a short verdict, the exit code is the verdict.",
        epilog=usage, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--impl", default="paged", help="module under test (exports PagedKVCache, OutOfBlocks), or exec:CMD for a driver; default: paged")
    p.add_argument("--xfails", metavar="FILE", help="tests expected to fail: one node id a line, each with '# reason'")
    p.add_argument("--replay", metavar="FILE", help="replay one transcript against the implementation, and nothing else")
    p.add_argument("--vectors", action="store_true", help="replay the conformance vectors (ci/vectors/*.txt), and nothing else")
    p.add_argument("--transcript-out", metavar="PATH", help="where the first failure's calls are written (default: a new temporary folder)")
    p.add_argument("--all-failures", action="store_true", help="run every test; by default the first pass stops after 5 failures")
    p.add_argument("--mutmut", action="store_true", help="also run the mutmut score (ci/mutation; a source checkout only)")
    p.add_argument("--profile", metavar="OPTION=VALUE[,...]", help="the port's profile (docs/CONTRACT.md, Profiles); default: the one it declares")
    p.add_argument("--exhaustive", action="store_true", help="every call sequence of at most --depth calls on tiny pools (wire/explore.py), and nothing else")
    p.add_argument("--depth", type=int, default=6, help="--exhaustive: the bound on the number of calls (default 6)")
    p.add_argument("--junit-xml", metavar="PATH", help="also write every step's tests as JUnit XML to PATH")
    p.add_argument("--coverage", action="store_true", help="also print each state machine's coverage table: behaviours, examples reaching them, share, floor")
    return p


def parse(argv: list[str], prog: str = "paged-gate") -> Options:
    """The options; paths are made absolute, since pytest runs in the suite's folder."""
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    a = parser(prog).parse_args(argv)
    return Options(
        impl=anchored(a.impl), xfails=absolute(a.xfails), replay=absolute(a.replay), vectors=a.vectors, transcript_out=absolute(a.transcript_out),
        all_failures=a.all_failures, mutmut=a.mutmut, profile=a.profile, exhaustive=a.exhaustive, depth=a.depth,
        junit_xml=absolute(a.junit_xml), coverage=a.coverage, extra=extra,
    )


def absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def anchored(impl: str) -> str:
    """An `exec:` command whose words that name a file here made absolute (the suite starts the driver
    from its own folder); a module name, or a folder (`--impl paged` in a checkout), as it is."""
    if not impl.startswith("exec:"):
        return impl
    words = shlex.split(impl[5:])
    return "exec:" + shlex.join(str(Path(w).resolve()) if not w.startswith("-") and Path(w).is_file() else w for w in words)


def environment() -> None:
    """What the gate's subprocesses inherit: PYTHONPATH made absolute (pytest runs elsewhere), and this
    installation's scripts first on PATH (`exec:paged-driver`)."""
    if os.environ.get("PYTHONPATH"):
        os.environ["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)
    os.environ["PATH"] = scripts_first(os.environ.get("PATH", ""))


def source_step(name: str, cmd: list[str], root: Path, says: str) -> Step:
    """A step of the source checkout (the planted mutants, mutmut), run as a command."""
    banner(name)
    start = time.monotonic()
    print("$ " + " ".join(cmd), flush=True)
    ok = subprocess.call(cmd, cwd=root) == 0
    return Step(name, ok, says if ok else "see the output above", time.monotonic() - start)


def steps(o: Options, profile: Profile, out: Path, work: Path, prog: str) -> list[Step]:
    """Run the steps the options select, in order."""
    start = time.monotonic()
    if o.exhaustive:
        banner(f"every call sequence of <= {o.depth} calls against {o.impl} (wire/explore.py)")
        ok, detail, _, cases = explored(o.impl, o.depth, out, None, str(profile))
        done = [Step("exhaustive", ok, detail, time.monotonic() - start, cases)]
    elif o.replay or o.vectors:
        paths = [Path(o.replay)] if o.replay else vector_files()
        banner(f"replaying {o.replay or f'{len(paths)} vectors'} against {o.impl}")
        ok, detail, cases = replay_files(o.impl, paths, profile)
        first = next((p for p, c in zip(paths, cases) if c.failure is not None), None)
        if first is not None and not o.replay:
            detail += f"\n  the first failing vector, as the transcript: {keep(first, out)}; replay it alone: {prog} --replay {out} --impl '{o.impl}'"
        done = [Step("replay" if o.replay else "vectors", ok, detail, time.monotonic() - start, cases)]
    else:
        banner(f"conformance suite against {o.impl}")
        ok, detail, report = conformance(
            o.impl, profile, xfails=o.xfails, extra=o.extra, transcript_out=out, work=work, maxfail=0 if o.all_failures else 5, prog=prog
        )
        done = [Step("conformance", ok, detail, time.monotonic() - start, junit=report)]
    root = checkout()
    if o.ours and root is not None:
        done.append(source_step("planted mutants", [sys.executable, "-m", "mutants"], root, "kill rate >= 0.80, no errors"))
    if o.mutmut and root is not None:
        done.append(source_step("mutmut", [str(root / "ci" / "mutation")], root, "score >= MUTATION_THRESHOLD"))
    return done


def cannot_run(o: Options, why: str) -> int:
    """The verdict when the gate cannot run (exit 2), in the JUnit XML too, as an error."""
    print(f"\n=== gate verdict for {o.impl}: CANNOT RUN ===\n{why}")
    if o.junit_xml:
        junit.write(Path(o.junit_xml), [Step("gate", False, f"CANNOT RUN: {why}")])
    return 2


def main(argv: list[str] | None = None, prog: str = "paged-gate") -> int:
    o = parse(sys.argv[1:] if argv is None else argv, prog)
    environment()
    start = time.monotonic()
    missing = [m for m in SUITE_NEEDS if o.runs_suite and importlib.util.find_spec(m) is None]
    if missing:
        return cannot_run(o, f"the conformance suite needs {', '.join(missing)}: pip install 'paged-kv-cache[test]' (docs/GATING.md)")
    if o.mutmut and checkout() is None:
        return cannot_run(o, "--mutmut scores our own suite's mutants: run it from a source checkout (ci/gate --mutmut)")
    problem = unreachable(o.impl)
    own = ""
    try:
        own = declared(o.impl) if not problem else ""
        profile = parse_profile(o.profile if o.profile is not None else own)
    except (ProfileError, DriverError) as exc:
        problem = f"profile: {exc}"
    if problem:
        return cannot_run(o, problem)
    source = "given by --profile" if o.profile is not None else ("declared by the implementation" if own else "the default")
    print(f"profile: {profile.describe()} ({source})")
    if o.profile is not None:
        os.environ["PAGED_PROFILE"] = o.profile  # the conformance run's conftest reads it
    work = Path(tempfile.mkdtemp(prefix="paged-gate-"))
    out = Path(o.transcript_out) if o.transcript_out else work / "transcript.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)  # a transcript there from an earlier run must not pass for this one's
    if o.coverage:
        coverage.ask(work / "coverage")
    done = steps(o, profile, out, work, prog)
    if o.coverage:
        print("\n" + coverage.tables(work / "coverage"))
    print("\n" + render(o.impl, str(profile), done, time.monotonic() - start))
    if out.exists():
        print(f"the failure's transcript: {out}")
    if o.ours and checkout() is None:
        print("(planted mutants: not run; they score our own suite from a source checkout: ci/gate)")
    elif not o.ours and o.runs_suite:
        print("(for --impl, the conformance suite is the verdict; mutation scores measure our own suite)")
    if o.junit_xml:
        junit.write(Path(o.junit_xml), done)
        print(f"JUnit XML: {o.junit_xml}")
    return 0 if passed(done) else 1
