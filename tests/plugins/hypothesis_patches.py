"""The two internals of Hypothesis the suite sets, each for a reason no setting serves, each with a
meta-test that fails when it stops taking effect:

- `limit_shrinking`: Hypothesis's module constant MAX_SHRINKING_SECONDS (300 s, no setting), lowered to
  PAGED_SHRINK_SECONDS when the gate asks (the `implementation` plugin calls it at configure), so that
  a broken implementation gets its verdict in time (meta_tests/test_plugin.py);
- `pin_local_constants`: no constants drawn from the modules a process has loaded, so that derandomised
  examples depend on the profile alone (meta_tests/test_determinism.py). Applied when this plugin loads.
"""

from __future__ import annotations

import copy


def limit_shrinking(seconds: float | None) -> None:
    """Let Hypothesis shrink one failure for at most `seconds` (None: its own limit, 300 s).

    The gate sets it (PAGED_SHRINK_SECONDS) so that a broken implementation gets its verdict in time.
    Hypothesis has no setting for it: its engine reads the module constant
    `hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS` when shrinking starts, so the
    constant is set, and only when asked. meta-test: meta_tests/test_plugin.py."""
    if seconds is None:
        return
    from hypothesis.internal.conjecture import engine

    engine.MAX_SHRINKING_SECONDS = int(seconds)


def pin_local_constants() -> bool:
    """Keep Hypothesis from drawing constants out of the modules a process has loaded; whether it did.

    Hypothesis (since 6.131) sometimes draws a constant it found in any local module loaded so far
    (`hypothesis.internal.conjecture.providers._get_local_constants`): the port's own module, our
    packages when installed editable, ci/examples, modules an earlier test on the same xdist worker
    imported. A derandomised example would then depend on the port, on the install and on which
    tests ran before it, and so would the coverage floors (a 7% share seen as 4% after other tests
    on one worker). Emptying that pool, an internal with no setting, makes the `ci` and `gate`
    examples a function of the profile alone; Hypothesis's fixed global constants stay.
    meta-test: meta_tests/test_determinism.py."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        return False  # a Hypothesis without local constants: nothing to pin
    empty = copy.deepcopy(providers._local_constants)
    for pool in (empty.integers, empty.floats, empty.bytes, empty.strings):
        pool.clear()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    return True


pin_local_constants()
