"""The bounded exhaustive explorer (explorer/) against the implementation under test (--impl): every
short call sequence on tiny pools, at a small depth, one test a geometry, in a few seconds;
`ci/gate --exhaustive` runs it to depth 6. The explorer's own tests (that it is honest: shortest
failures, no claim past what it walked, faithful copies) are meta_tests/explorer/test_explorer.py.
"""

from __future__ import annotations

import pytest

import explorer
from tests import harness
from tests.assertions import assert_equal, assert_no_difference

pytestmark = pytest.mark.exhaustive

WALKED = explorer.EVERY_GEOMETRY  # the base geometries, then the window's (W = 2 and 3) and hybrid models', each walked when the port announces it
DEPTH = 3


@pytest.mark.parametrize(
    "g", [pytest.param(g, id=g.name, marks=[pytest.mark.walk(g.name, DEPTH), *([pytest.mark.needs(*sorted(g.needs))] if g.needs else [])]) for g in WALKED]
)
def test_every_short_sequence_agrees(g: explorer.Geometry) -> None:
    (result,) = explorer.run(harness.target(), DEPTH, [g], profile=harness.profile())
    assert_no_difference("\n".join(explorer.report([result], harness.target(), None)[1]) if result.failure is not None else None)
    assert_equal("the walk's states, sequences and tree depth past the first state", (result.states > 1, result.sequences > 1, result.tree_depth), (True, True, DEPTH), "explorer.run")
