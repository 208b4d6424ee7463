"""`paged-gate` (or `ci/gate` in a checkout): the arguments, the supervisor, and the worker that runs the steps.

    paged-gate                                  # our own paged: vectors, explorer, suite (+ planted mutants in a checkout)
    paged-gate --impl MODULE                    # a Python implementation (exports PagedKVCache, OutOfBlocks)
    paged-gate --impl 'exec:CMD'                # a driver in any language, speaking docs/PROTOCOL.md
    paged-gate --impl ... --xfails FILE         # a port in progress: listed failures do not fail the gate
    paged-gate --impl ... --vectors             # replay the conformance vectors (ci/vectors) only
    paged-gate --impl ... --replay FILE         # replay one transcript (a vector, or a failure the gate wrote)
    paged-gate --impl ... --profile allocation=any   # the port's profile (docs/CONTRACT.md, Profiles), if it declares none
    paged-gate --impl ... --exhaustive [--depth K]   # the explorer to depth K (default 6) on tiny pools
    paged-gate --impl ... --all-failures        # every step and every test, not only up to the first failure
    paged-gate --impl ... --junit-xml PATH      # every test as JUnit XML, for a CI system
    paged-gate --impl ... --coverage            # ... and what each state machine's examples reached
    paged-gate --impl ... --require hybrid      # FAIL, naming it, unless the implementation announces each capability
    paged-gate --mutmut                         # ... and the mutmut score (ci/mutation; a checkout only; slow)

The whole gate runs the cheapest steps first (the vectors, the explorer to a small depth, the suite)
and ends at the first failure, with its transcript, written to --transcript-out (default: transcript.txt
in a new temporary folder; a file at --transcript-out is deleted before the steps run). For a driver, the
Python-surface tests are skipped with CONTRACT.md's reason and counted apart, as are tests needing a
capability the driver does not announce. The suite follows the port's profile (a module's PROFILE, a
driver's hello; --profile overrides both). The verdict names what it certified. Exit 0 PASS, 1 FAIL,
2 the gate could not run, 3 PARTIAL (arguments after `--` narrowed the suite; 0 with --partial-ok).
Arguments after `--` go to the conformance pytest run, which runs in the suite's folder (test paths
such as tests/test_catalog.py are relative to it).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

from oracle.profile import ProfileError, declared
from oracle.profile import parse as parse_profile  # the edge: --profile's text

from testkit.config import Config

from paged_gate import coverage, junit, suite_env
from paged_gate.locate import checkout, scripts_first
from paged_gate.options import Options, parse
from paged_gate.plan import steps
from paged_gate.supervise import Channel, supervise
from paged_gate.target import reach
from paged_gate.verdict import Step, render, stopped, word

SUITE_NEEDS = ("pytest", "hypothesis", "xdist")  # what the conformance suite imports beyond the package's own dependencies
EXIT = {"PASS": 0, "FAIL": 1, "CANNOT RUN": 2, "PARTIAL": 3}


def usage(prog: str) -> str:
    return (__doc__ or "").split("\n\n", 1)[1].replace("paged-gate", prog)


def environment() -> None:
    """What the gate's subprocesses inherit: PYTHONPATH made absolute (pytest runs elsewhere), and this
    installation's scripts first on PATH (`exec:paged-driver`)."""
    if os.environ.get("PYTHONPATH"):
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep) if p)
    os.environ["PATH"] = scripts_first(os.environ.get("PATH", ""))


def cannot_run(o: Options, why: str) -> int:
    """The verdict when the gate cannot run (exit 2), in the JUnit XML too, as an error."""
    return no_verdict(o, "CANNOT RUN", why)


def no_verdict(o: Options, verdict: str, why: str) -> int:
    """A verdict given before (or instead of) the steps': CANNOT RUN, or the supervisor's FAIL."""
    print(stopped(o.impl, verdict, why), flush=True)
    if o.junit_xml:
        junit.write(Path(o.junit_xml), [Step("gate", False, f"{verdict}: {why}")])
    return EXIT[verdict]


def worker(o: Options, prog: str, channel: Channel) -> int:
    """Reach the implementation, run the steps, print the verdict; the exit code."""
    suite_env.pin()  # before the implementation runs here: what it sets is never handed to the suite's pytest runs
    try:
        config = replace(Config.from_env(), impl=o.impl)
    except ProfileError as exc:
        return cannot_run(o, f"PAGED_PROFILE: {exc}")
    target = reach(config.implementation, config.hello_seconds)  # the implementation, taken apart and reached once, here
    if isinstance(target, str):
        return cannot_run(o, target)
    print(target.line())
    missing = sorted(o.require - target.capabilities)
    if missing:  # a CI that requires a part of the contract must not pass a port that stopped announcing it
        return no_verdict(o, "FAIL", f"--require {', '.join(missing)}: the implementation does not announce {', '.join(missing)}, so it cannot be gated on it")
    if target.driver:
        config = replace(config, announced=target.announced)  # every session of the suite's must announce it too
    try:  # the profile resolved once, here: --profile, else PAGED_PROFILE, else the declared one, else the default
        config = config.given(parse_profile(o.profile)) if o.profile is not None else config.following(declared(target.profile))
    except ProfileError as exc:
        return cannot_run(o, f"profile: {exc}")
    if o.also_renamed and not config.profile.exact_ids:  # the profile under test, wherever it came from
        return cannot_run(o, f"--also-renamed: the profile under test, {config.profile} ({config.profile_source}), compares tables up to a "
                             "renaming already; --also-renamed adds that check to a walk under allocation=lowest-free")
    print(f"profile: {config.profile.describe()} ({config.profile_source})")
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="paged-gate-"))
    out = Path(o.transcript_out) if o.transcript_out else work / "transcript.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)  # a transcript there from an earlier run must not pass for this one's
    if o.coverage:
        config = replace(config, coverage_out=work / "coverage")
    done, scope = steps(o, config, out, work, prog, channel)
    scope = replace(scope, env_set=tuple(suite_env.set_since()))
    if o.coverage:
        print("\n" + coverage.tables(work / "coverage"))
    channel.enter("printing the verdict", runs_implementation=False)
    print("\n" + render(target, config.profile, done, scope, time.monotonic() - start))
    if out.exists():
        print(f"the failure's transcript: {out}")
    notes(o)
    if o.junit_xml:
        junit.write(Path(o.junit_xml), done)
        print(f"JUnit XML: {o.junit_xml}")
    verdict = word(done, scope)
    return 0 if verdict == "PARTIAL" and o.partial_ok else EXIT[verdict]


def notes(o: Options) -> None:
    if o.ours and checkout() is None:
        print("(planted mutants: not run; they score our own suite from a source checkout: ci/gate)")
    elif not o.ours and o.runs_suite:
        print("(for --impl, the conformance suite is the verdict; mutation scores measure our own suite)")


def work(o: Options, prog: str) -> int:
    """The worker process (`--channel`): every way it can end without a verdict is told to the supervisor."""
    channel = Channel(o.channel)
    try:
        code = worker(o, prog, channel)
    except SystemExit as exc:  # from the implementation's code, run in this process (a module's vectors, explorer)
        channel.why("fail", f"the implementation raised SystemExit({exc.code!r}) during {channel.stage}")
        return 1
    except Exception as exc:  # noqa: BLE001 - the gate's own failure: CANNOT RUN, with the traceback
        traceback.print_exc()
        channel.why("error", f"the gate failed during {channel.stage}: {type(exc).__name__}: {exc} (the traceback is above)")
        return 2
    sys.stdout.flush()
    channel.verdict(code)
    return code


def main(argv: list[str] | None = None, prog: str = "paged-gate") -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    o = parse(args, prog, usage(prog))
    if o.channel is not None:
        return work(o, o.prog or prog)
    environment()
    missing = [m for m in SUITE_NEEDS if o.runs_suite and importlib.util.find_spec(m) is None]
    if missing:
        return cannot_run(o, f"the conformance suite needs {', '.join(missing)}: pip install 'paged-kv-cache[test]' (docs/GATING.md)")
    refused = suite_env.refused() if o.runs_suite else ""
    if refused:
        return cannot_run(o, refused)
    if o.mutmut and checkout() is None:
        return cannot_run(o, "--mutmut scores our own suite's mutants: run it from a source checkout (ci/gate --mutmut)")
    try:
        start_seconds = Config.from_env().start_seconds  # to import a module, or start a driver and have its hello
    except ProfileError as exc:
        return cannot_run(o, f"PAGED_PROFILE: {exc}")
    ending = supervise(args, prog, start_seconds, o.timeout)
    if ending.word:
        return no_verdict(o, ending.word, ending.why)
    return ending.code
