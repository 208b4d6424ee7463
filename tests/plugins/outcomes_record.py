"""--outcomes PATH: each test's outcome (and its skip reason or first failure line), the tests pytest
selected to run and how many it deselected, as JSON, for ci/gate (the record's fields: testkit/outcomes.py;
a selected test with no outcome means the run ended early). Beside each outcome, as user properties
that xdist carries to the controller: the test's calls into an engine's own code (`engine_calls`, a
module's optional count, docs/GATING.md), the capabilities it needs (`needs`), whether it shrinks (a
state machine, or another Hypothesis test) and the vector it replays; and the tests marked `evidence`."""

from __future__ import annotations

from typing import Any, Generator

import pytest
from hypothesis import is_hypothesis_test

from testkit.outcomes import ENGINE_CALLS, EXAMPLE, LEFT_OUT, MACHINE, NEEDS, PROPERTIES, SHRINKS, VECTOR, Record
from tests import harness
from tests.plugins import covered
from tests.plugins.expected_failures import XFAILS_SECTION

ENGINE_BEFORE = pytest.StashKey[int | None]()

# What --outcomes records: each test's outcome, and, so that ci/gate can check every selected test has one,
# the tests pytest selected to run (under xdist, as a worker collected them) and how many it deselected.
RECORD = Record()
OUTCOMES = RECORD.tests


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--outcomes",
        default=None,
        metavar="PATH",
        help="write every test's outcome (and skip reason or first failure line), the tests selected and the number "
        "deselected to PATH as JSON, for ci/gate",
    )


def engine_calls() -> int | None:
    """The implementation's count of its calls into an engine's own code so far (a module's optional
    `engine_calls()`, docs/GATING.md), or None when it keeps none."""
    if harness.is_wire():
        return None
    try:
        count = getattr(harness.raw_impl(), "engine_calls", None)
    except Exception:  # noqa: BLE001 - a module that cannot load keeps no count; its tests say why it cannot load
        return None
    return int(count()) if callable(count) else None


@pytest.hookimpl(tryfirst=True)  # before the `implementation` plugin may skip the test for a capability
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[ENGINE_BEFORE] = engine_calls()
    needs = sorted({cap for mark in item.iter_markers("needs") for cap in mark.args})
    if needs:
        item.user_properties.append((NEEDS, ",".join(needs)))
    if item.get_closest_marker("stateful") is not None:
        item.user_properties.append((SHRINKS, MACHINE))
    elif is_hypothesis_test(getattr(item, "obj", None)):
        item.user_properties.append((SHRINKS, EXAMPLE))
    vector = item.get_closest_marker("vector")
    if vector is not None:
        item.user_properties.append((VECTOR, vector.args[0]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    """How many calls the test made into the engine's own code, from its set-up to the end of its call,
    as a user property of its report (which xdist carries to the controller)."""
    yield
    before, after = item.stash.get(ENGINE_BEFORE, None), engine_calls()
    if before is not None and after is not None:
        item.user_properties.append((ENGINE_CALLS, after - before))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's outcome, for --outcomes (under xdist, the controller sees every worker's reports)."""
    entry = OUTCOMES.setdefault(report.nodeid, {"outcome": "passed"})
    entry.update((name, value) for name, value in report.user_properties if name in PROPERTIES)
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
        entry["detail"] = next((text for title, text in report.sections if title == XFAILS_SECTION), entry["detail"])


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped as a whole (`allow_module_level`) counts as one skip, as pytest's summary counts it."""
    if report.skipped:
        longrepr = report.longrepr
        OUTCOMES[report.nodeid] = {"outcome": "skipped", "detail": str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)}


def pytest_collection_finish(session: pytest.Session) -> None:
    RECORD.selected[:] = [item.nodeid for item in session.items]
    RECORD.evidence[:] = [item.nodeid for item in session.items if item.get_closest_marker("evidence") is not None]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist, the controller's view of a worker's collection: the tests selected (every worker
    collects the same)."""
    RECORD.selected[:] = list(ids)


@pytest.hookimpl(tryfirst=True)  # before any plugin deselects a test
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """What pytest collected, and how many of those the suite's configuration leaves out (`LEFT_OUT`): the
    gate tells a test its own selection left out from one something else took away."""
    RECORD.collected = len(items)
    RECORD.left_out = sum(1 for item in items if item.get_closest_marker(LEFT_OUT) is not None)


def pytest_deselected(items: list[pytest.Item]) -> None:
    RECORD.deselected += len(items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """Under xdist, what a worker's collection found that the controller's view of it lacks (every worker collects the same)."""
    output = getattr(node, "workeroutput", {})
    RECORD.deselected = max(RECORD.deselected, int(output.get("deselected", 0)))
    RECORD.covered = max(RECORD.covered, int(output.get("covered", 0)))
    RECORD.collected = max(RECORD.collected, int(output.get("collected", 0)))
    RECORD.left_out = max(RECORD.left_out, int(output.get("left_out", 0)))
    RECORD.evidence[:] = RECORD.evidence or list(output.get("evidence", []))


def pytest_sessionfinish(session: pytest.Session) -> None:
    RECORD.covered = max(RECORD.covered, covered.COUNT[0])  # a worker's (or a run's without xdist) own count
    if hasattr(session.config, "workerinput"):  # an xdist worker: what only its collection knows goes to the controller
        session.config.workeroutput.update(  # type: ignore[attr-defined]
            deselected=RECORD.deselected, covered=RECORD.covered, evidence=RECORD.evidence, collected=RECORD.collected, left_out=RECORD.left_out
        )
    path = session.config.getoption("--outcomes")
    if path and not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist) writes it
        RECORD.write(path)
