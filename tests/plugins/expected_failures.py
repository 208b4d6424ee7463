"""--xfails FILE: the failures a port expects (a port in progress), one test and its failure a line
(testkit/xfails.py parses them). Strict: a listed test that fails as listed is an expected failure, one
that fails otherwise (a second failure beside the listed one among them) stays failed with both texts, one
that passes fails (its entry must go); an entry that names several tests, or none the run collects, is a
usage error. `judge_listed` is applied by the `strict_outcomes` plugin,
after its own judgment (the order matters: see there)."""

from __future__ import annotations

import warnings
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


class Refused(UserWarning):
    """An xdist worker's refusal of --xfails entries, carried to the controller as a warning (xdist forwards a
    worker's warnings, in order, before its collection's end), which refuses them before any test runs."""


REFUSED: list[str] = []  # the refusals a worker sent, as the controller received them


def named_one_by_one(config: pytest.Config) -> set[str]:
    """The files (relative to the root) some of whose tests the command line names (FILE::TEST): the run collects
    those alone, so an entry for another of their tests is not stale."""
    files = set()
    for arg in config.args:
        if "::" in arg:
            path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
            if path.is_relative_to(config.rootpath):
                files.add(path.relative_to(config.rootpath).as_posix())
    return files


@pytest.hookimpl(tryfirst=True)  # before any deselection (-k, -m, --needing): an entry is judged on the whole collection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = xfails.refused(XFAILS, [item.nodeid for item in items], config.rootpath, named_one_by_one(config))
    if not problems:
        return
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError("--xfails: " + "\n".join(problems))
    message = warnings.WarningMessage(Refused("\n".join(problems)), Refused, __file__, 0)
    config.hook.pytest_warning_recorded.call_historic(kwargs=dict(warning_message=message, when="collect", nodeid="", location=None))


def pytest_warning_recorded(warning_message: warnings.WarningMessage, when: str, nodeid: str, location: Any) -> None:
    if issubclass(warning_message.category, Refused):
        REFUSED.append(str(warning_message.message))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist, the controller at a worker's collection's end: the refusals it sent (every worker collects the
    same), raised before any test is scheduled."""
    if REFUSED:
        raise pytest.UsageError("--xfails: " + REFUSED[0])


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
        if listed.matches(call.excinfo.value):
            report.outcome, report.wasxfail = "skipped", message  # type: ignore[attr-defined]
        else:
            report.sections.append((XFAILS_SECTION, f"{listed.where} expects {listed.expects!r}; the failure is:\n{message}"))
    elif report.passed and call.when == "call":
        fail(report, f"{LISTED_PASSED} {listed.where} lists, {listed.expects!r} [{report.nodeid}]: "
                     "xfails are strict, so a listed test that passes fails; take its entry off the list")
