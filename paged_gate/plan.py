"""The steps of a run, cheapest first, and the first proof of a bug ends it.

The whole gate replays the conformance vectors (about a second through a compiled driver), then walks
the explorer to depth QUICK_DEPTH (docs/EXHAUSTIVE.md says what that covers), then runs the suite (its cheap,
broad tests first), less the tests that would replay a vector or walk a geometry the steps before it ran
without a failure (`testkit.covered`: each is run once). Unless --all-failures is given, the first failure ends the run with its transcript:
the first failing vector, the explorer's failing sequence, or the suite's first failing test; the
steps after it are reported as not run. A PASS runs every step. --vectors, --replay and --exhaustive
run their one step. Arguments after `--` that may narrow the suite (any not on the QUIET list) and
--xfails (a port in progress, whose listed failures only the suite knows) run the suite alone; QUIET
arguments keep every step. Each step says what it counted.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from testkit.config import Config
from testkit.covered import Covered
from testkit.locate import vector_files

from paged_gate.conformance import banner, conformance
from paged_gate.exhaustive import explored
from paged_gate.locate import checkout
from paged_gate.options import Options
from paged_gate.supervise import Channel
from paged_gate.transcripts import keep, replay_files
from paged_gate.verdict import Scope, Step, not_run
from wire.process import DriverError

QUICK_DEPTH = 3  # the explorer's depth in the whole gate, on its quick geometries (explorer/alphabet.py): 4 s through the Rust driver on 2 cores at load 11 to 15 (docs/EXHAUSTIVE.md)


class Run:
    """One run's steps in order: where each writes its failure's transcript, and whether the next runs."""

    def __init__(self, o: Options, config: Config, out: Path, work: Path, prog: str, channel: Channel) -> None:
        self.o, self.config, self.out, self.work, self.prog, self.channel = o, config, out, work, prog, channel
        self.done: list[Step] = []
        self.listed = 0
        self.walked = ""  # the parts of the contract the explorer's geometries walked (its verdict line's first words)
        self.covered = Covered()  # what the early steps ran without a failure: the conformance run does not run it again
        self.taken = ""  # the tests gone from the conformance run that the gate's own selection kept (`Outcomes.taken`)

    def transcript(self, name: str) -> Path:
        """The named place for the first failure's transcript; a later failure's (--all-failures) goes beside the others."""
        return self.out if not self.out.exists() else self.work / f"{name.split(',')[0]}-transcript.txt"

    def step(self, name: str, body: Callable[[Path], Step], runs_implementation: bool = True) -> None:
        """Run one step, unless an earlier one failed and every failure is not wanted."""
        failed = next((s.name for s in self.done if not s.ok), None)
        if failed is not None and not self.o.all_failures:
            self.done.append(not_run(name, f"the {failed} step failed first (--all-failures runs every step)"))
            return
        self.channel.enter(f"the {name} step", runs_implementation)
        start = time.monotonic()
        step = body(self.transcript(name))
        step.seconds = time.monotonic() - start
        self.done.append(step)

    def vectors(self, out: Path, stop_at_first: bool) -> Step:
        paths = [Path(self.o.replay)] if self.o.replay else telling_first(vector_files())
        banner(f"replaying {self.o.replay or f'{len(paths)} vectors'} against {self.o.impl}")
        ok, detail, cases = replay_files(self.config.implementation, paths, self.config.profile, stop_at_first, self.config.driver_timeout)
        self.covered.vectors |= {p.name for p, c in zip(paths, cases) if c.failure is None}
        first = next((p for p, c in zip(paths, cases) if c.failure is not None), None)
        if first is not None and not self.o.replay:
            detail += f"\n  the first failing vector, as the transcript: {keep(first, out)}; replay it alone: {self.prog} --replay {out} --impl '{self.o.impl}'"
        exercised = frozenset().union(*(c.requires for c in cases if c.failure is None and c.skipped is None))
        offered = frozenset().union(*(c.requires for c in cases))
        return Step("replay" if self.o.replay else "vectors", ok, detail, cases=cases, exercised=exercised, offered=offered)

    def explorer(self, out: Path, depth: int, quick: bool = False) -> Step:
        banner(f"the bounded exhaustive explorer, depth {depth}, against {self.o.impl} (explorer/)")
        try:
            ok, detail, _, cases, whole = explored(self.config, depth, out, None, quick, self.o.also_renamed)
        except DriverError as exc:  # the driver would not start, or its hello differs from the first session's
            return Step(f"explorer, depth {depth}", False, str(exc))
        self.walked = detail.split("\n", 1)[0]
        self.covered.walks.update(whole)
        walked = [c for c in cases if c.skipped is None]
        if ok and (not walked or len(walked) < len(cases)):
            ok, detail = False, detail + f"\n      {len(walked)} of {len(cases)} geometries walked to depth {depth}: no guarantee for the others"
        return Step(f"explorer, depth {depth}", ok, detail, cases=cases)

    def suite(self, out: Path) -> Step:
        banner(f"conformance suite against {self.o.impl}")
        covered = None
        if self.covered.vectors or self.covered.walks:
            covered = self.work / "covered.json"
            self.covered.write(covered)
        ok, detail, report, self.listed, exercised, self.taken = conformance(
            self.config, xfails=self.o.xfails, extra=self.o.extra, transcript_out=out, work=self.work,
            maxfail=0 if self.o.all_failures else 1, prog=self.prog, covered=covered,
        )
        return Step("conformance", ok, detail, junit=report, exercised=exercised)


def telling_first(paths: list[Path]) -> list[Path]:
    """The vectors in the order their failure tells most: the seed's example and pitfalls, then the rest by
    name, the seeded random ones last (a targeted vector names the bug; a random one only shows it)."""
    def rank(path: Path) -> tuple[int, str]:
        name = path.stem
        first = name.startswith("seed-") or (name[:1] == "s" and name[1:3].isdigit())
        return (0 if first else 2 if "random-" in name else 1), name

    return sorted(paths, key=rank)


def source_step(name: str, cmd: list[str], root: Path, says: str) -> Step:
    """A step of the source checkout (the planted mutants, mutmut), run as a command."""
    banner(name)
    print("$ " + " ".join(cmd), flush=True)
    ok = subprocess.call(cmd, cwd=root) == 0
    return Step(name, ok, says if ok else "see the output above")


def steps(o: Options, config: Config, out: Path, work: Path, prog: str, channel: Channel) -> tuple[list[Step], Scope]:
    """Run the steps the options select, in order, with the run's settings (`config`, its profile resolved:
    what every step and the conformance run test under); the steps and what the run set out to check."""
    run = Run(o, config, out, work, prog, channel)
    if o.exhaustive:
        run.step("exhaustive", lambda path: run.explorer(path, o.depth))
        walked = f"{run.walked}; " if run.walked else ""
        return run.done, Scope(only=f"the explorer to depth {o.depth} on its geometries ({walked}what each geometry walked: above)", also_renamed=o.also_renamed)
    if o.replay or o.vectors:
        run.step("replay" if o.replay else "vectors", lambda path: run.vectors(path, stop_at_first=False))
        return run.done, Scope(only=f"the transcript {Path(o.replay).name}" if o.replay else "the conformance vectors")
    whole = not narrowing(o.extra) and not o.xfails  # arguments after `--` that select nothing keep every step
    if whole:
        run.step("vectors", lambda path: run.vectors(path, stop_at_first=not o.all_failures))
        run.step(f"explorer, depth {QUICK_DEPTH}", lambda path: run.explorer(path, QUICK_DEPTH, quick=True))
    run.step("conformance", run.suite)
    root = checkout()
    if o.ours and root is not None:
        run.step("planted mutants", lambda _: source_step("planted mutants", [sys.executable, "-m", "mutants"], root, "kill rate >= 0.80, no errors"), False)
    if o.mutmut and root is not None:
        run.step("mutmut", lambda _: source_step("mutmut", [str(root / "ci" / "mutation")], root, "score >= MUTATION_THRESHOLD"), False)
    narrowed = narrowing(o.extra)
    return run.done, Scope(narrowed=narrowed, listed=run.listed, taken="" if narrowed else run.taken)


# Arguments after `--` that select nothing: they change only how pytest reports the run or spreads it over
# processes (True: the option takes a value). Any other argument may narrow the suite or change what its
# tests do (a test path, -k, -m, --deselect, -x, -o, -p: `-p no:unittest` drops the state machines), and
# the run is PARTIAL. docs/GATING.md lists them.
QUIET = {
    "-q": False, "--quiet": False, "-v": False, "-vv": False, "-vvv": False, "--verbose": False, "-r": True,
    "--tb": True, "--color": True, "--no-header": False, "-l": False, "--showlocals": False, "--durations": True,
    "-s": False, "--capture": True, "-n": True, "--numprocesses": True, "--dist": True,
}
ATTACHED = ("-n", "-r")  # short options whose value may be attached: -n0, -rA


def narrowing(extra: list[str]) -> str:
    """The arguments after `--`, when one of them is not on the QUIET list (it may narrow the suite); else ""."""
    i = 0
    while i < len(extra):
        arg = extra[i]
        name = arg.split("=", 1)[0]
        if name in QUIET:
            i += 2 if QUIET[name] and "=" not in arg else 1
        elif arg[:2] in ATTACHED and len(arg) > 2:
            i += 1
        else:
            return " ".join(extra)
    return ""
