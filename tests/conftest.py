"""Suite-wide set-up: the implementation under test (--impl / PAGED_IMPL), Hypothesis profiles,
the tests a driver skips, and failure transcripts (--transcript).

Profiles (HYPOTHESIS_PROFILE or --hypothesis-profile): `ci` derandomised with a fixed
budget, `dev` random (the local default), `thorough` ten times the examples, `mutation`
with no shrinking for mutant scoring, `gate` as `ci` but with no shrinking (the gate's
first, fast pass), `gate-shrink` as `ci` without the slow explain phase (the gate's second). Every profile prints the failing operation sequence.

For a driver (`--impl=exec:CMD`), tests marked `python_surface` are skipped with the reason
CONTRACT.md gives, and so are tests that need a capability the driver does not announce.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Generator

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

import harness
from oracle.profile import parse as parse_profile

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
settings.register_profile("gate", parent=_CI, phases=_NO_SHRINK)
# The gate's second pass wants one minimal failing sequence (it writes one transcript): with several distinct
# failures reported (Hypothesis's default), it went on generating for up to 10 s after the first, then shrank
# each one found, and ran past PAGED_SHRINK_SECONDS (s06, s27: three failures; Hypothesis's warning then says
# "five minutes" whatever the limit). One failure, shrunk with slips to any smaller one, fits in that time.
settings.register_profile(
    "gate-shrink", parent=_CI, phases=[*_NO_SHRINK, Phase.shrink], report_multiple_bugs=False  # no slow explain phase
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
        "--profile",
        default=os.environ.get("PAGED_PROFILE") or None,
        metavar="OPTION=VALUE[,...]",
        help="the profile to test under (docs/CONTRACT.md, Profiles), overriding the one the implementation "
        "declares (a module's PROFILE, a driver's hello); default: $PAGED_PROFILE, else the declared one",
    )
    parser.addoption(
        "--xfails",
        default=None,
        metavar="FILE",
        help="tests expected to fail (a port in progress): one node id a line, each followed by '# reason'",
    )
    parser.addoption(
        "--outcomes",
        default=None,
        metavar="PATH",
        help="write every test's outcome (and skip reason or first failure line) to PATH as JSON, for ci/gate",
    )
    parser.addoption(
        "--transcript",
        default=None,
        metavar="PATH",
        help="record every call; write the first failing test's calls (its shrunk example) to PATH as a transcript",
    )
    parser.addoption(
        "--coverage-out",
        default=os.environ.get("PAGED_COVERAGE_OUT") or None,
        metavar="DIR",
        help="write each state machine's coverage table (behaviours reached, share, floor) to DIR/<machine>.txt "
        "(default: $PAGED_COVERAGE_OUT, else nowhere)",
    )


def pytest_configure(config: pytest.Config) -> None:
    harness.set_impl_name(config.getoption("--impl"))
    os.environ["PAGED_IMPL"] = config.getoption("--impl")  # so xdist workers and subprocesses agree
    harness.record_to(config.getoption("--transcript"))
    if config.getoption("--profile") is not None:
        parse_profile(config.getoption("--profile"))  # a bad profile is a usage error, before any test
        harness.set_profile_override(config.getoption("--profile"))
        os.environ["PAGED_PROFILE"] = config.getoption("--profile")


# Run order: the cheap, broad tests first (the seed's catalog, the vectors), the long ones last (the
# catalog's 10^4-operation run, the machines), so a run that stops at its first failure (-x: the mutant
# runners, mutmut, the gate's first pass) reaches its verdict early.
ORDER = ("test_catalog.py", "test_vectors.py", "test_errors.py", "test_allocation.py", "test_fork.py", "test_data.py")
LONG = ("test_random_ops_conserve_blocks",)


def run_rank(item: pytest.Item) -> tuple[bool, int]:
    long = item.get_closest_marker("stateful") is not None or item.name in LONG
    return long, ORDER.index(item.path.name) if item.path.name in ORDER else len(ORDER)


def read_xfails(path: str) -> dict[str, str]:
    """node id (or a prefix of one: a file, a class, a test without its parameters) -> reason."""
    out: dict[str, str] = {}
    for number, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        node, sep, reason = line.partition("#")
        if not sep or not reason.strip():
            raise pytest.UsageError(f"{path}:{number}: every listed test needs a reason: 'NODE_ID  # why it fails'")
        out[node.strip()] = reason.strip()
    return out


def listed(nodeid: str, xfails: dict[str, str]) -> str | None:
    for entry, reason in xfails.items():
        if nodeid == entry or nodeid.startswith((entry + "::", entry + "[")):
            return reason
    return None


def pytest_sessionstart(session: pytest.Session) -> None:
    from machines import coverage  # here, not above: the machines read the Hypothesis profile loaded above

    out = session.config.getoption("--coverage-out")
    coverage.OUT[:] = [Path(out).resolve()] if out else []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=run_rank)
    if config.getoption("--xfails"):
        xfails = read_xfails(config.getoption("--xfails"))
        for item in items:
            reason = listed(item.nodeid, xfails)
            if reason is not None:
                item.add_marker(pytest.mark.xfail(reason=f"listed in --xfails: {reason}", strict=False))
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


OUTCOMES: dict[str, dict[str, str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's outcome, for --outcomes (under xdist, the controller sees every worker's reports)."""
    entry = OUTCOMES.setdefault(report.nodeid, {"outcome": "passed"})
    if hasattr(report, "wasxfail"):
        entry["outcome"] = "xfailed" if report.skipped else "xpassed"
        entry["detail"] = str(report.wasxfail)
    elif report.skipped:
        entry["outcome"] = "skipped"
        longrepr = report.longrepr
        entry["detail"] = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
    elif report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
        message = getattr(report.longrepr, "reprcrash", None)
        entry["detail"] = message.message if message is not None else str(report.longrepr).strip().splitlines()[-1]


def pytest_sessionfinish(session: pytest.Session) -> None:
    harness.stop_drivers()
    path = session.config.getoption("--outcomes")
    if path and not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist) writes it
        import json

        with open(path, "w", encoding="utf-8") as out:
            json.dump(OUTCOMES, out, indent=1)


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        module = harness.impl()
        where = getattr(module, "__file__", "?")
    except Exception as exc:  # noqa: BLE001 - the header reports why the implementation is unusable
        where = f"cannot load: {exc}"
    try:
        under = harness.profile().describe()
    except Exception as exc:  # noqa: BLE001 - the header reports why the profile is unusable
        under = f"unusable: {exc}"
    return [f"implementation under test: {config.getoption('--impl')} ({where})", f"profile: {under}"]


@pytest.fixture(scope="session")
def impl() -> Any:
    """The module under test, exporting PagedKVCache and OutOfBlocks."""
    return harness.impl()
