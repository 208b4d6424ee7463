"""The suite's Hypothesis profiles, registered and loaded when this plugin loads (HYPOTHESIS_PROFILE, else
`ci` under CI, else `dev`; Hypothesis's own --hypothesis-profile overrides it).

`ci` derandomised with a fixed budget, `dev` random (the local default), `thorough` ten times the
examples, `mutation` with no shrinking for mutant scoring (`mutmut`, half its examples, for
ci/mutation), `gate` as `ci` but with no shrinking (the gate's first, fast pass), `gate-shrink` as `ci`
without the slow explain phase (the gate's second). Every profile prints the failing operation sequence.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings

_BASE = dict(deadline=None, print_blob=True, verbosity=Verbosity.normal)
settings.register_profile("ci", derandomize=True, max_examples=60, database=None, **_BASE)
settings.register_profile("dev", max_examples=60, **_BASE)
settings.register_profile("thorough", max_examples=600, **_BASE)
_CI = settings.get_profile("ci")
_NO_SHRINK = [Phase.explicit, Phase.reuse, Phase.generate]
settings.register_profile(
    "mutation",
    parent=_CI,
    max_examples=20,  # a third of ci's: ci/mutation runs the whole suite for each mutant it cannot kill
    stateful_step_count=25,  # half the default, for the same reason
    phases=_NO_SHRINK,
    suppress_health_check=list(HealthCheck),
)
# ci/mutation's (mutmut): half the examples of `mutation` (the machines 20). mutmut runs every test of a
# mutated function for each of its mutants that no earlier test kills, and twice more before them (its
# stats and its clean run); the planted mutants keep `mutation`. ci/mutation's score is the check.
settings.register_profile("mutmut", parent=settings.get_profile("mutation"), max_examples=10)
settings.register_profile("gate", parent=_CI, phases=_NO_SHRINK)
# The gate's second pass wants one minimal failing sequence (it writes one transcript): with several distinct
# failures reported (Hypothesis's default), it went on generating for up to 10 s after the first, then shrank
# each one found, and ran past PAGED_SHRINK_SECONDS (s06, s27: three failures; Hypothesis's warning then says
# "five minutes" whatever the limit). One failure, shrunk with slips to any smaller one, fits in that time.
settings.register_profile(
    "gate-shrink", parent=_CI, phases=[*_NO_SHRINK, Phase.shrink], report_multiple_bugs=False  # no slow explain phase
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
