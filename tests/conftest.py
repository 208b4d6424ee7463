"""Suite-wide set-up: the implementation under test (--impl / PAGED_IMPL), Hypothesis profiles,
the tests a driver skips, and failure transcripts (--transcript).

Profiles (HYPOTHESIS_PROFILE or --hypothesis-profile): `ci` derandomised with a fixed
budget, `dev` random (the local default), `thorough` ten times the examples, `mutation`
with no shrinking for mutant scoring, `gate` as `ci` but with no shrinking (the gate's
first, fast pass). Every profile prints the failing operation sequence.

For a driver (`--impl=exec:CMD`), tests marked `python_surface` are skipped with the reason
CONTRACT.md gives, and so are tests that need a capability the driver does not announce.
"""

from __future__ import annotations

import os
from typing import Any, Generator

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

import harness

PYTHON_SURFACE = (
    "Python surface, no meaning for a driver (CONTRACT.md 'What a conforming port is checked on': "
    "TypeError rows, rounding of non-float16 inputs, aliasing of returned arrays, `with`)"
)

# How long Hypothesis may shrink one failure (its default is 300 s); the gate sets it so that a
# broken implementation gets its verdict in time. An internal of Hypothesis, set only when asked.
if os.environ.get("PAGED_SHRINK_SECONDS"):
    from hypothesis.internal.conjecture import engine as _engine

    _engine.MAX_SHRINKING_SECONDS = int(os.environ["PAGED_SHRINK_SECONDS"])

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
settings.register_profile(
    "gate",
    derandomize=True,
    max_examples=60,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_BASE,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=os.environ.get("PAGED_IMPL") or "paged",
        help="module exporting PagedKVCache and OutOfBlocks to test, or exec:CMD for a driver speaking "
        "docs/PROTOCOL.md (default: $PAGED_IMPL, else paged)",
    )
    parser.addoption(
        "--transcript",
        default=None,
        metavar="PATH",
        help="record every call; write the first failing test's calls (its shrunk example) to PATH as a transcript",
    )


def pytest_configure(config: pytest.Config) -> None:
    harness.set_impl_name(config.getoption("--impl"))
    os.environ["PAGED_IMPL"] = config.getoption("--impl")  # so xdist workers and subprocesses agree
    harness.record_to(config.getoption("--transcript"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not harness.is_wire():
        return
    for item in items:
        if item.get_closest_marker("python_surface"):
            item.add_marker(pytest.mark.skip(reason=PYTHON_SURFACE))
        elif item.get_closest_marker("bench"):
            item.add_marker(pytest.mark.skip(reason="the benchmark measures our Python module, not a driver"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        missing = set(mark.args) - harness.capabilities()
        if missing:
            pytest.skip(f"the implementation does not have the capability {', '.join(sorted(missing))}")
    harness.begin_example()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        path = harness.write_failure(item.nodeid, str(call.excinfo.value))
        if path is not None:
            report.sections.append(("transcript", f"the calls of this failure, as a transcript: {path}"))


def pytest_sessionfinish(session: pytest.Session) -> None:
    harness.stop_drivers()


def pytest_report_header(config: pytest.Config) -> str:
    try:
        module = harness.impl()
        where = getattr(module, "__file__", "?")
    except Exception as exc:  # noqa: BLE001 - the header reports why the implementation is unusable
        where = f"cannot load: {exc}"
    return f"implementation under test: {config.getoption('--impl')} ({where})"


@pytest.fixture(scope="session")
def impl() -> Any:
    """The module under test, exporting PagedKVCache and OutOfBlocks."""
    return harness.impl()
