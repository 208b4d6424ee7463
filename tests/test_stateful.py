"""Model-based verification: the Hypothesis state machines of `machines` against the dictionary-of-lists oracle.

`TestCacheMachine` runs add, fork, append (one layer, chunks of 1 to more than two blocks
at any offset), whole forward steps, free, OutOfBlocks at exactly one block short and
appends that run out on their own, checking every observable after every step.
`TestFaultMachine` adds every fault of the contract's error table that a driver can be
sent (KeyError and ValueError rows, an empty chunk among them) at any state, and
`TestTypeFaultMachine` the TypeError rows (the Python surface, skipped for a driver).

Each test counts the behaviours its examples reach and, under the ci and gate profiles,
fails when one falls below its floor (`machines.coverage`; tested in test_coverage.py).

A failure shows first the requests the cache received, in the wire protocol, up to the
first answer that differs from the oracle's (`machines.report`), then the steps in
Python rule names (test_reports.py checks that on a broken cache). `ci/gate` runs TestCacheMachine
(marked `evidence`) again, shrunk, when a failing test is no machine.
"""

from __future__ import annotations

import pytest

from tests.machines import SETTINGS, CacheMachine, FaultMachine, TypeFaultMachine, floored

pytestmark = pytest.mark.stateful

TestCacheMachine = pytest.mark.evidence(floored(CacheMachine))  # the gate's machine to shrink when the failing tests have none
TestCacheMachine.settings = SETTINGS
TestFaultMachine = floored(FaultMachine)
TestFaultMachine.settings = SETTINGS
TestTypeFaultMachine = pytest.mark.python_surface(floored(TypeFaultMachine))
TestTypeFaultMachine.settings = SETTINGS

