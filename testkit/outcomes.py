"""The outcomes record: what the suite's run writes (`--outcomes PATH`, tests/plugins/outcomes_record.py)
and the gate reads (paged_gate/conformance.py), as JSON, its fields named here once.

Each test's entry has its `outcome` (one of KINDS) and `detail` (a skip's reason, a failure's first line),
and what the suite says of the test beside it (its user properties, which xdist carries to the
controller): PROPERTIES. The record also lists the tests pytest selected (one with no outcome means the
run ended early), how many it deselected (`covered` of them because the gate's early steps ran them:
testkit/covered.py), how many it collected before any plugin deselected one (`collected`, `left_out` of them
marked LEFT_OUT, which the suite's configuration deselects: so the gate can tell a test gone by its own
selection from one gone by another's) and `evidence`, the selected tests the suite marks as the one to run again, shrunk,
for a failure's transcript when the failing test is no state machine of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
ENGINE_CALLS = "engine_calls"  # the test's calls into an engine's own code (a module's optional count, docs/GATING.md)
NEEDS = "needs"  # the capabilities the test needs, comma-separated (its `needs` marks)
SHRINKS = "shrinks"  # MACHINE for a state machine (its `stateful` mark), EXAMPLE for another Hypothesis test
VECTOR = "vector"  # the conformance vector's file name the test replays (its `vector` mark)
PROPERTIES = (ENGINE_CALLS, NEEDS, SHRINKS, VECTOR)
MACHINE, EXAMPLE = "machine", "example"
LEFT_OUT = "slow"  # the mark pyproject.toml's addopts deselects (`-m 'not slow'`): the suite's own selection


@dataclass
class Record:
    """The record as written: each test's entry by node id (a test file skipped whole is one entry, as
    pytest counts it), the tests selected, the number deselected (`covered` of them by the gate's early
    steps), the number collected before any was deselected (`left_out` of them marked LEFT_OUT) and the
    `evidence` tests."""

    tests: dict[str, dict[str, Any]] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)
    deselected: int = 0
    covered: int = 0
    evidence: list[str] = field(default_factory=list)
    collected: int = 0
    left_out: int = 0

    def write(self, path: str | Path) -> None:
        data = {"selected": self.selected, "deselected": self.deselected, "covered": self.covered, "evidence": self.evidence,
                "collected": self.collected, "left_out": self.left_out, "tests": self.tests}
        Path(path).write_text(json.dumps(data, indent=1), encoding="utf-8")


def read(path: Path) -> Record | None:
    """The record at path, or None when pytest wrote none (or an unreadable one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Record(
            dict(data["tests"]), list(data["selected"]), int(data["deselected"]), int(data["covered"]), list(data["evidence"]),
            int(data["collected"]), int(data["left_out"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
