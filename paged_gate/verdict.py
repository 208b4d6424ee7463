"""A step's outcome (`Step`, with its JUnit test cases) and the verdict that reports them all: PASS,
PARTIAL, FAIL, each naming what it certified and what it did not test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from oracle.profile import Profile

from wire.target import Target

from paged_gate.target import OPTIONAL


@dataclass
class Case:
    """One test case of a step, as JUnit XML shows it: failure and skipped hold the message."""

    classname: str
    name: str
    seconds: float = 0.0
    failure: str | None = None
    skipped: str | None = None
    requires: frozenset[str] = frozenset()  # the capabilities it needs (a vector's `requires`)


@dataclass
class Step:
    """What one step of the gate found: the verdict's line, and what JUnit XML shows of it (pytest's
    own report for the conformance suite, else its cases; a step without cases is one case). A step
    the gate did not run (an earlier one failed first) has `ran` False and one skipped case. The vectors and the
    suite say which optional parts of the contract they `exercised`: the verdict claims a part only when each did."""

    name: str
    ok: bool
    detail: str
    seconds: float = 0.0
    cases: list[Case] = field(default_factory=list)
    junit: Path | None = None
    ran: bool = True
    exercised: frozenset[str] | None = None  # the capabilities its passing vectors or tests needed (None: a step that tells none)
    offered: frozenset[str] | None = None  # the capabilities any of its vectors or tests needs (None: every one)


def not_run(name: str, why: str) -> Step:
    return Step(name, True, f"not run: {why}", cases=[Case(name, name, skipped=why)], ran=False)


@dataclass(frozen=True)
class Scope:
    """What a run set out to check: the whole gate (`only` empty), or one part of it (`only` names it:
    the vectors, one transcript, the explorer); `narrowed` names the pytest arguments that selected
    part of the suite (a PARTIAL run); `listed` counts the tests that failed as --xfails listed them;
    `taken` says which tests the gate's own selection kept went missing (a PARTIAL run too); `env_set`, the
    pytest and Hypothesis variables the implementation set in the gate's process (never handed on: paged_gate.suite_env)."""

    only: str = ""
    narrowed: str = ""
    listed: int = 0
    taken: str = ""
    env_set: tuple[str, ...] = ()
    also_renamed: bool = False  # --exhaustive --also-renamed: every table also checked up to a renaming of block ids


def parts(target: Target, steps: Sequence[Step] = ()) -> tuple[list[str], list[str]]:
    """(the parts of the contract a run checks, the parts it cannot: each with why). An optional part the
    implementation announced is checked only when every step that tells (the vectors, the suite) and has
    vectors or tests of it ran some of them and they passed."""
    checked, untested = ["base contract"], []
    telling = [s for s in steps if s.ran and s.exercised is not None]
    for word, name in OPTIONAL.items():
        if word not in target.capabilities:
            continue
        silent = [s.name for s in telling if word not in (s.exercised or ()) and (s.offered is None or word in s.offered)]
        if silent:
            untested.append(f"{name} (announced, but no vector or test of it passed in: {', '.join(silent)})")
        else:
            checked.append(name)
    untested += [f"{name} (not announced)" for name in unannounced(target)]
    if target.driver:
        untested.append("Python surface (a driver has none)")
    else:
        checked.append("Python surface")
    return checked, untested


def unannounced(target: Target) -> list[str]:
    """The optional parts of the contract the implementation does not announce: not tested."""
    return [name for word, name in OPTIONAL.items() if word not in target.capabilities]


def word(steps: list[Step], scope: Scope) -> str:
    """PASS, PARTIAL (every step passed, but the suite was narrowed, or tests the gate kept went missing) or FAIL."""
    if not passed(steps):
        return "FAIL"
    return "PARTIAL" if scope.narrowed or scope.taken else "PASS"


def certified(target: Target, steps: list[Step], scope: Scope) -> str:
    """The verdict word with what it certified and what it left untested, e.g. `PASS: base contract,
    prefix caching (not tested: Python surface (a driver has none))`. A run of one part (`--vectors`,
    `--replay`, `--exhaustive`) certifies that part only, and says so."""
    verdict = word(steps, scope)
    if verdict == "FAIL":
        return verdict
    if scope.only:
        missing = unannounced(target)
        note = f" ({', '.join(missing)} not announced, not tested)" if missing else ""
        return f"PASS, {scope.only} only{note}"
    checked, untested = parts(target, steps)
    what = ", ".join(checked) if len(checked) > 1 else "base contract only"
    if untested:
        what += f" (not tested: {'; '.join(untested)})"
    if scope.listed:
        what += f"; {scope.listed} tests failed as --xfails lists them"
    if scope.narrowed:
        return f"PARTIAL, not a PASS: only the tests `-- {scope.narrowed}` selects, of {what}"
    if scope.taken:
        return f"PARTIAL, not a PASS: tests the gate selected did not run ({scope.taken}), of {what}"
    return f"PASS: {what}"


def short(detail: str) -> str:
    """A failure's message without Hypothesis's report or pytest's diff: at most three lines."""
    keep: list[str] = []
    for line in detail.strip().splitlines():
        if not line.strip() or line.startswith(("Failing test case", "Explanation", "At index", "Use -v", "  ", "Full diff")):
            if keep:
                break
            continue
        keep.append(line.strip()[:400])
    return "\n         ".join(keep[:3])


def render(target: Target, profile: Profile, steps: list[Step], scope: Scope, seconds: float) -> str:
    """The verdict: its head line (what it certified, under which profiles), then one line (and its details) a step."""
    named = str(profile) or "default"
    if scope.also_renamed:  # the profile's checks, and allocation=any's of every table
        named += f" and {profile.any_ids()} (tables up to renaming)"
    head = f"=== gate verdict for {target.impl}, profile {named} ({seconds:.0f} s): {certified(target, steps, scope)} ==="
    lines = [head]
    if scope.env_set:
        lines.append(f"the implementation set {', '.join(scope.env_set)} in the gate's process: not handed to the suite's pytest runs")
    for s in steps:
        mark = "NOT RUN" if not s.ran else "PASS" if s.ok else "FAIL"
        lines.append(f"{mark}  {s.name}" + (f" ({s.seconds:.0f} s)" if s.ran else "") + f": {s.detail.removeprefix('not run: ')}")
    return "\n".join(lines)


def stopped(impl: str, verdict: str, why: str) -> str:
    """The verdict of a run that ended before its steps could give one (CANNOT RUN, or FAIL)."""
    return f"\n=== gate verdict for {impl}: {verdict} ===\n{why}"


def passed(steps: list[Step]) -> bool:
    return all(s.ok for s in steps)
