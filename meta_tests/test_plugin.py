"""The suite's plugin of Hypothesis's internals (tests/plugins/hypothesis_patches.py) on its own: the one
internal it sets for time, `limit_shrinking`, still takes effect (`pin_local_constants`:
meta_tests/test_determinism.py)."""

from __future__ import annotations

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine
from hypothesis.reporting import with_reporter

from tests.plugins import hypothesis_patches

SLOW = "stopped because it is making very slow progress"  # Hypothesis's words when the shrinking time runs out


def shrink_reports(seconds: float | None) -> list[str]:
    """What Hypothesis reports for a failure shrunk under `limit_shrinking(seconds)` (the constant restored after)."""
    saved, said = engine.MAX_SHRINKING_SECONDS, []

    @settings(database=None, derandomize=True, max_examples=100, phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False)
    @given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1))
    def fails(xs: list[int]) -> None:
        assert sum(xs) < 1000

    try:
        hypothesis_patches.limit_shrinking(seconds)
        with with_reporter(lambda text: said.append(str(text))), pytest.raises(AssertionError):
            fails()
    finally:
        engine.MAX_SHRINKING_SECONDS = saved
    return said


def test_the_shrinking_limit_stops_hypothesis_shrinking() -> None:
    """With the limit at 0 s, Hypothesis stops shrinking and says so; with none, it shrinks to the end."""
    assert any(SLOW in text for text in shrink_reports(0)), "limit_shrinking no longer limits Hypothesis's shrinking"
    assert not any(SLOW in text for text in shrink_reports(None))
