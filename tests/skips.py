"""The suite's own reasons to skip a test, in one place. A skip for any other reason is a failure
(tests/plugins/strict_outcomes.py, `judge_unlisted`): whoever raised it, an implementation that raises unittest.SkipTest
or pytest's Skipped on input it cannot handle must not turn a failure into a skip."""

from __future__ import annotations

import re

from wire.replay import MISSING_CAPABILITY
from wire.transcript import OTHER_PROFILE

PYTHON_SURFACE = (
    "Python surface, no meaning for a driver (CONTRACT.md 'What a conforming port is checked on': "
    "TypeError rows, rounding of non-float16 inputs, aliasing of returned arrays, `with`)"
)
BENCHMARK = "the benchmark measures our Python module, not a driver"
OWN_ALLOCATOR = "paged's own allocator: no part of the contract"
WINDOW_TYPE = "a non-integer window has no meaning on the wire (the Python surface)"
ENGINES = "the engine adapters' tests: run with --impl=engines.NAME (vllm_v1, vllm_window, vllm_window_served, vllm_hybrid, vllm_hybrid_served or nano_vllm), or PAGED_ENGINES=1"
UNKNOWN_PROFILE = "its profile line names options this suite does not know"  # wire.transcript.written_for_another


def engine_adapter(name: str) -> str:
    return f"the {name} adapter's tests run with --impl=engines.{name} or PAGED_ENGINES=1"


def engine_missing(name: str, exc: BaseException) -> str:
    return f"{name}: engine not installed ({exc})"


_EXACT = frozenset({PYTHON_SURFACE, BENCHMARK, OWN_ALLOCATOR, WINDOW_TYPE, ENGINES})
_STARTS = (MISSING_CAPABILITY + " ", OTHER_PROFILE + " ", UNKNOWN_PROFILE + ": ")
_ENGINE = re.compile(r"the \w+ adapter's tests run with --impl=engines\.\w+ or PAGED_ENGINES=1|\w+: engine not installed \(.*\)", re.S)


def ours(reason: str) -> bool:
    """Whether a skip's reason is one the suite gives (pytest's "Skipped: " prefix allowed)."""
    reason = reason.removeprefix("Skipped: ")
    return reason in _EXACT or reason.startswith(_STARTS) or _ENGINE.fullmatch(reason) is not None
