"""Suite-wide set-up: the implementation under test (--impl / PAGED_IMPL) and Hypothesis profiles.

Profiles (HYPOTHESIS_PROFILE or --hypothesis-profile): `ci` derandomised with a fixed
budget, `dev` random (the local default), `thorough` ten times the examples, `mutation`
with no shrinking for mutant scoring. Every profile prints the failing operation sequence.
"""

from __future__ import annotations

import os
from types import ModuleType

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

import harness

_BASE = dict(deadline=None, print_blob=True, verbosity=Verbosity.normal)
settings.register_profile("ci", derandomize=True, max_examples=60, database=None, **_BASE)
settings.register_profile("dev", max_examples=60, **_BASE)
settings.register_profile("thorough", max_examples=600, **_BASE)
settings.register_profile(
    "mutation",
    derandomize=True,
    max_examples=60,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=list(HealthCheck),
    **_BASE,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=os.environ.get("PAGED_IMPL") or "paged",
        help="module exporting PagedKVCache and OutOfBlocks to test (default: $PAGED_IMPL, else paged)",
    )


def pytest_configure(config: pytest.Config) -> None:
    harness.set_impl_name(config.getoption("--impl"))
    os.environ["PAGED_IMPL"] = config.getoption("--impl")  # so xdist workers and subprocesses agree


def pytest_report_header(config: pytest.Config) -> str:
    try:
        module = harness.impl()
        where = getattr(module, "__file__", "?")
    except ImportError as exc:
        where = f"cannot import: {exc}"
    return f"implementation under test: {config.getoption('--impl')} ({where})"


@pytest.fixture(scope="session")
def impl() -> ModuleType:
    """The module under test, exporting PagedKVCache and OutOfBlocks."""
    return harness.impl()
