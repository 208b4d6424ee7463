"""The implementation under test and the run's settings: --impl (or PAGED_IMPL), --profile,
--transcript (record every call; the first failure's calls written as a transcript), --coverage-out
and --needing (only the tests that need one capability); the tests a driver skips; the report header
and the `impl` fixture.

The run's settings are one `testkit.config.Config`, built here (the edge): the environment's
PAGED_* settings, overridden by this plugin's options, then handed to the harness (`harness.configure`),
to the subprocesses a test starts (the environment) and to Hypothesis's shrinking limit
(`hypothesis_patches.limit_shrinking`).

For a driver (`--impl=exec:CMD`), tests marked `python_surface` are skipped with the reason
CONTRACT.md gives, and so is the benchmark; so are tests that need a capability the implementation
does not announce (tests/skips.py holds every reason the suite skips for).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from oracle.profile import ProfileError
from oracle.profile import parse as parse_profile  # the edge: --profile's text
from testkit.config import WATCHED, Config
from tests import harness, skips
from tests.plugins.hypothesis_patches import limit_shrinking
from wire.process import first_hello
from wire.replay import missing_capability

PYTHON_SURFACE = skips.PYTHON_SURFACE
# pytest's and Hypothesis's variables as this run was started with, before the implementation is imported (at configure, or later)
STARTED_WITH = {name: value for name, value in os.environ.items() if name.startswith(WATCHED)}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=None,
        help="module exporting PagedKVCache and OutOfBlocks to test, or exec:CMD for a driver speaking "
        "docs/PROTOCOL.md (default: $PAGED_IMPL, else paged)",
    )
    parser.addoption(
        "--profile",
        default=None,
        metavar="OPTION=VALUE[,...]",
        help="the profile to test under (docs/CONTRACT.md, Profiles), overriding the one the implementation "
        "declares (a module's PROFILE, a driver's hello); default: $PAGED_PROFILE, else the declared one",
    )
    parser.addoption(
        "--transcript",
        default=None,
        metavar="PATH",
        help="record every call; write the first failing test's calls (its shrunk example) to PATH as a transcript",
    )
    parser.addoption(
        "--coverage-out",
        default=None,
        metavar="DIR",
        help="write each state machine's coverage table (behaviours reached, share, floor) to DIR/<machine>.txt "
        "(default: $PAGED_COVERAGE_OUT, else nowhere)",
    )
    parser.addoption(
        "--needing",
        default=None,
        metavar="CAPABILITY",
        help="run only the tests marked as needing CAPABILITY (`needs`; a vector by its `requires`), the others "
        "deselected: an engine adapter's gate narrowed to what it adds to another adapter's (mutants/engines/runner.py)",
    )


def settings_of(config: pytest.Config) -> Config:
    """The run's settings: the environment's, overridden by --impl, --profile and --coverage-out; a bad
    profile is a usage error, before any test. A profile not given is the implementation's, which the
    harness reads once it reaches it (`harness.config`)."""
    try:
        base = Config.from_env()
        profile = config.getoption("--profile")
        base = base.given(parse_profile(profile)) if profile is not None else base
    except ProfileError as exc:
        raise pytest.UsageError(f"--profile: {exc}") from None
    out = config.getoption("--coverage-out")
    coverage_out = Path(out) if out else base.coverage_out
    return replace(base, impl=config.getoption("--impl") or base.impl, coverage_out=coverage_out.resolve() if coverage_out else None)


def pytest_configure(config: pytest.Config) -> None:
    run = settings_of(config)
    limit_shrinking(run.shrink_seconds)
    harness.configure(run, config.getoption("--transcript"))
    os.environ.update(run.child_env())  # the edge: subprocesses a test starts inherit the run's settings
    command = run.implementation.command
    if run.announced is not None and command is not None:
        first_hello(command, run.announced.split())  # the gate's first session's: every driver session here must announce it


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list[Any]) -> None:
    """xdist's workers read pytest's and Hypothesis's variables again (PYTEST_ADDOPTS, HYPOTHESIS_PROFILE), from this
    process's environment: they get them as this run was started, never as the implementation, imported here, left them."""
    for name in [name for name in os.environ if name.startswith(WATCHED) and name not in STARTED_WITH]:
        del os.environ[name]
    os.environ.update(STARTED_WITH)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--needing's selection; a driver has no Python surface, and the benchmark times a module."""
    needing = config.getoption("--needing")
    if needing:
        dropped = [item for item in items if not any(needing in mark.args for mark in item.iter_markers("needs"))]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            gone = set(dropped)
            items[:] = [item for item in items if item not in gone]
    if not harness.is_wire():
        return
    for item in items:
        if item.get_closest_marker("python_surface"):
            item.add_marker(pytest.mark.skip(reason=PYTHON_SURFACE))
        elif item.get_closest_marker("bench"):
            item.add_marker(pytest.mark.skip(reason=skips.BENCHMARK))


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        missing = set(mark.args) - harness.capabilities()
        if missing:
            pytest.skip(missing_capability(missing))
    harness.begin_example()


def pytest_sessionfinish(session: pytest.Session) -> None:
    harness.stop_drivers()


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        module = harness.impl()
        where = getattr(module, "__file__", "?")
    except Exception as exc:  # noqa: BLE001 - the header reports why the implementation is unusable
        where = f"cannot load: {exc}"
    try:
        under = f"{harness.profile().describe()} ({harness.config().profile_source})"
    except Exception as exc:  # noqa: BLE001 - the header reports why the profile is unusable
        under = f"unusable: {exc}"
    return [f"implementation under test: {config.getoption('--impl')} ({where})", f"profile: {under}"]


@pytest.fixture(scope="session")
def impl() -> Any:
    """The module under test, exporting PagedKVCache and OutOfBlocks."""
    return harness.impl()
