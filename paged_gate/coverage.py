"""`--coverage`: each state machine's coverage table, from the conformance run itself.

Every machine test counts the behaviours its examples reach (seen from the oracle) and, under the
gate's Hypothesis profile, fails when one falls below its floor (tests/machines/coverage.py). Asked
through the run's Config (`coverage_out`: PAGED_COVERAGE_OUT for the conformance run, the suite's
`--coverage-out`), each machine test that runs writes its table (behaviour, examples reaching it,
share, floor) to a file in that folder; `tables` prints them.
"""

from __future__ import annotations

from pathlib import Path


def tables(folder: Path) -> str:
    """The tables the run wrote, one a machine, or why there are none."""
    found = sorted(folder.glob("*.txt")) if folder.is_dir() else []
    if not found:
        return "coverage: no state machine ran to its end in this run (they run in the conformance suite, last)"
    return "coverage of the state machines (examples reaching each behaviour, seen from the oracle):\n" + "\n".join(
        p.read_text(encoding="utf-8").rstrip() for p in found
    )
