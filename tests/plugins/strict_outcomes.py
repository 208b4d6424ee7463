"""The outcomes only the suite may give. An expected failure the suite did not list (pytest's XFailed,
raised by the implementation) and a skip for a reason that is none of the suite's own (tests/skips.py:
unittest.SkipTest on input the implementation cannot handle, say) are failures.

Every report is judged in one hook wrapper, in this order: these two rules first, then --xfails
(`expected_failures.judge_listed`, which marks a listed failure as expected: judged the other way round,
that mark would be taken for the implementation's own), then the transcript of a failure that is still
one (--transcript, tests/harness.py).
"""

from __future__ import annotations

from typing import Any, Generator

import pytest

from tests import harness, skips
from tests.plugins.expected_failures import fail, judge_listed


def judge_unlisted(report: pytest.TestReport) -> None:
    """An expected failure no --xfails entry lists, and a skip for a reason not the suite's, made failures."""
    if hasattr(report, "wasxfail"):  # pytest's (judge_listed runs after): the suite lists nothing that way
        reason = str(report.wasxfail)
        del report.wasxfail
        fail(report, f"outcome=xfailed ({reason!r}), but should be passed [{report.nodeid}]: "
                     "no --xfails entry names this test, so nothing may turn its failure into an expected one")
    elif report.skipped:
        longrepr = report.longrepr
        reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
        if not skips.ours(reason):
            fail(report, f"skip reason={reason.removeprefix('Skipped: ')!r}, but should be one of the suite's own (tests/skips.py) "
                         f"[{report.nodeid}]: a skip raised by the implementation (unittest.SkipTest, pytest.skip) is a failure")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # the outermost wrapper: it sees the report pytest's xfail handling made
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    judge_unlisted(report)
    judge_listed(report, call)
    if report.failed and call.excinfo is not None:
        path = harness.write_failure(item.nodeid, str(call.excinfo.value))
        if path is not None:
            report.sections.append(("transcript", f"the calls of this failure, as a transcript: {path}"))
