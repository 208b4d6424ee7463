"""The suite's examples depend on the profile alone, not on the modules a process has loaded.

Hypothesis draws constants from every local module loaded so far unless the plugin pins that pool
empty (pin_local_constants, tests/plugins/hypothesis_patches.py): a port's module, or a test that ran earlier on the same
worker, would otherwise change the derandomised examples and the coverage shares. Marked `oracle`:
it checks the suite's set-up, the same for every implementation.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

pytestmark = pytest.mark.oracle

MARK = 918_273_645  # a constant no other module holds


def draws() -> list[int]:
    """Integers a derandomised test draws, in order."""
    seen: list[int] = []

    @settings(derandomize=True, max_examples=200, database=None)
    @given(st.integers())
    def run(n: int) -> None:
        seen.append(n)

    run()
    return seen


def test_a_loaded_modules_constants_are_never_drawn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this Hypothesis draws no constants from local modules")
    before = draws()
    (tmp_path / "holds_a_constant.py").write_text(f"LIMIT = {MARK}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("holds_a_constant")
    try:
        after = draws()
        pool = providers._get_local_constants()
        assert MARK not in pool.integers, "the plugin's pin is gone: Hypothesis read the module's constants"
        assert len(pool) == 0, f"local constants drawn from: {sorted(pool.integers)[:10]}"
        assert after == before, "the examples changed when a module was loaded"
    finally:
        sys.modules.pop("holds_a_constant", None)
