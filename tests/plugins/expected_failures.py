"""--xfails FILE: the failures a port expects (a port in progress), one test and its failure a line
(testkit/xfails.py parses them). Strict: a listed test that fails as listed is an expected failure, one
that fails otherwise stays failed with both texts, one that passes fails (its entry must go); an entry
that names several tests is a usage error. `judge_listed` is applied by the `strict_outcomes` plugin,
after its own judgment (the order matters: see there)."""

from __future__ import annotations

from typing import Any

import pytest

from testkit import xfails
from testkit.xfails import LISTED_PASSED

XFAILS: dict[str, xfails.Entry] = {}  # --xfails, read in every process (the controller, each worker)
XFAILS_SECTION = "not the failure listed in --xfails"  # the title of a failing listed test's report section


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--xfails",
        default=None,
        metavar="FILE",
        help=f"tests expected to fail (a port in progress): one a line, {xfails.FORMAT} (testkit/xfails.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--xfails"):
        path = config.getoption("--xfails")
        try:
            XFAILS.update(xfails.read(path))
        except (OSError, xfails.BadEntry) as exc:
            raise pytest.UsageError(f"--xfails: {exc}") from None


def refuse_wide_xfails(nodeids: list[str]) -> None:
    problems = xfails.too_wide(XFAILS, nodeids)
    if problems:
        raise pytest.UsageError("--xfails: " + "\n".join(problems))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # under xdist the controller checks, in the hook below
        refuse_wide_xfails([item.nodeid for item in items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist, the controller's view of a worker's collection: the refusal of an --xfails entry that
    names several of the tests selected (every worker collects the same)."""
    refuse_wide_xfails(ids)


def fail(report: pytest.TestReport, message: str) -> None:
    report.outcome, report.longrepr = "failed", message


def judge_listed(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """A listed test's report as --xfails says: its expected failure xfailed (the record keeps the actual
    message), another failure left failed with both texts, a pass a failure (xfails are strict: the entry
    must go)."""
    listed = XFAILS.get(report.nodeid)
    if listed is None or report.skipped:
        return
    if report.failed and call.excinfo is not None:
        message = xfails.failure_message(call.excinfo.value)
        if listed.matches(message):
            report.outcome, report.wasxfail = "skipped", message  # type: ignore[attr-defined]
        else:
            report.sections.append((XFAILS_SECTION, f"{listed.where} expects {listed.expects!r}; the failure is:\n{message}"))
    elif report.passed and call.when == "call":
        fail(report, f"{LISTED_PASSED} {listed.where} lists, {listed.expects!r} [{report.nodeid}]: "
                     "xfails are strict, so a listed test that passes fails; take its entry off the list")
