"""The suite's Hypothesis state machines, for test_stateful and test_prefix to run.

- `CacheMachine` (`cache`): the implementation and the oracle driven with the same valid calls;
- `FaultMachine`, `TypeFaultMachine` (`faults`): and every fault of the contract's error table;
- `PrefixMachine`, `PrefixFaultMachine` (`prefix`): the same with prefix caching on;
- `report`: a failure shown as the requests the cache received, in the wire protocol;
- `observe`, `coverage`: the behaviours each example reached (seen from the oracle), and the floors
  their shares must meet under the ci and gate profiles (`floored` makes a machine's test check them).

`SETTINGS`: twice the loaded profile's examples (ci, dev, thorough or mutation); the machines
are the suite's main line of defence, and a run of each takes a few seconds under ci.
"""

from hypothesis import settings

from .cache import CacheMachine, step
from .coverage import floored
from .faults import FaultMachine, TypeFaultMachine
from .prefix import PROMPTS, PrefixFaultMachine, PrefixMachine, recompute, small_geometry

SETTINGS = settings(max_examples=2 * settings().max_examples)

__all__ = [
    "CacheMachine", "FaultMachine", "PROMPTS", "PrefixFaultMachine", "PrefixMachine", "SETTINGS", "TypeFaultMachine",
    "floored", "recompute", "small_geometry", "step",
]
