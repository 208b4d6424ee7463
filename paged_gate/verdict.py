"""A step's outcome (`Step`, with its JUnit test cases) and the verdict that reports them all."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    """One test case of a step, as JUnit XML shows it: failure and skipped hold the message."""

    classname: str
    name: str
    seconds: float = 0.0
    failure: str | None = None
    skipped: str | None = None


@dataclass
class Step:
    """What one step of the gate found: the verdict's line, and what JUnit XML shows of it (pytest's
    own report for the conformance suite, else its cases; a step without cases is one case)."""

    name: str
    ok: bool
    detail: str
    seconds: float = 0.0
    cases: list[Case] = field(default_factory=list)
    junit: Path | None = None


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


def render(impl: str, profile: str, steps: list[Step], seconds: float) -> str:
    """The verdict: PASS when every step passed, with one line (and its details) a step."""
    head = f"=== gate verdict for {impl}, profile {profile or 'default'}: {'PASS' if passed(steps) else 'FAIL'} ({seconds:.0f} s) ==="
    return "\n".join([head, *(f"{'PASS' if s.ok else 'FAIL'}  {s.name} ({s.seconds:.0f} s): {s.detail}" for s in steps)])


def passed(steps: list[Step]) -> bool:
    return all(s.ok for s in steps)
