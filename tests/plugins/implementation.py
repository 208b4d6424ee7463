"""The suite's pytest plugin (loaded by tests/conftest.py and meta_tests/conftest.py): the
implementation under test (--impl / PAGED_IMPL), Hypothesis profiles, the tests a driver skips, failure
transcripts (--transcript), the failures a port expects (--xfails, tests/xfails.py, strict), the
outcomes only the suite may give (an expected failure it did not list, a skip for none of its reasons,
tests/skips.py: failures), and each test's outcome (--outcomes) with its calls into an engine
(engine_calls) and the capabilities it needs.

The run's settings are one `paged_gate.config.Config`, built here (the edge): the environment's
PAGED_* settings, overridden by this plugin's options, then handed to the harness (`harness.configure`).

Profiles (HYPOTHESIS_PROFILE or --hypothesis-profile): `ci` derandomised with a fixed
budget, `dev` random (the local default), `thorough` ten times the examples, `mutation`
with no shrinking for mutant scoring (`mutmut`, half its examples, for ci/mutation), `gate` as `ci` but with no shrinking (the gate's
first, fast pass), `gate-shrink` as `ci` without the slow explain phase (the gate's second). Every profile prints the failing operation sequence.

For a driver (`--impl=exec:CMD`), tests marked `python_surface` are skipped with the reason
CONTRACT.md gives, and so are tests that need a capability the driver does not announce.

Two internals of Hypothesis are set, each for a reason no setting serves, each with a meta-test that
fails when it stops taking effect:
- `limit_shrinking`: Hypothesis's module constant MAX_SHRINKING_SECONDS (300 s, no setting), lowered to
  PAGED_SHRINK_SECONDS when the gate asks, so that a broken implementation gets its verdict in time
  (meta_tests/test_plugin.py);
- `pin_local_constants`: no constants drawn from the modules a process has loaded, so that derandomised
  examples depend on the profile alone (meta_tests/test_determinism.py).
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Generator

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

import harness
import skips
import xfails
from oracle.profile import ProfileError
from oracle.profile import parse as parse_profile
from paged_gate.config import Config
from wire.client import first_hello, missing_capability

PYTHON_SURFACE = skips.PYTHON_SURFACE


def limit_shrinking(seconds: float | None) -> None:
    """Let Hypothesis shrink one failure for at most `seconds` (None: its own limit, 300 s).

    The gate sets it (PAGED_SHRINK_SECONDS) so that a broken implementation gets its verdict in time.
    Hypothesis has no setting for it: its engine reads the module constant
    `hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS` when shrinking starts, so the
    constant is set, and only when asked. meta-test: meta_tests/test_plugin.py."""
    if seconds is None:
        return
    from hypothesis.internal.conjecture import engine

    engine.MAX_SHRINKING_SECONDS = int(seconds)


def pin_local_constants() -> bool:
    """Keep Hypothesis from drawing constants out of the modules a process has loaded; whether it did.

    Hypothesis (since 6.131) sometimes draws a constant it found in any local module loaded so far
    (`hypothesis.internal.conjecture.providers._get_local_constants`): the port's own module, our
    packages when installed editable, ci/examples, modules an earlier test on the same xdist worker
    imported. A derandomised example would then depend on the port, on the install and on which
    tests ran before it, and so would the coverage floors (a 7% share seen as 4% after other tests
    on one worker). Emptying that pool, an internal with no setting, makes the `ci` and `gate`
    examples a function of the profile alone; Hypothesis's fixed global constants stay.
    meta-test: meta_tests/test_determinism.py."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        return False  # a Hypothesis without local constants: nothing to pin
    empty = copy.deepcopy(providers._local_constants)
    for pool in (empty.integers, empty.floats, empty.bytes, empty.strings):
        pool.clear()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    return True


pin_local_constants()

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
# ci/mutation's (mutmut): half the examples of `mutation` (the machines 20). mutmut runs every test of a
# mutated function for each of its mutants that no earlier test kills, and twice more before them (its
# stats and its clean run); the planted mutants keep `mutation`. ci/mutation's score is the check.
settings.register_profile("mutmut", parent=settings.get_profile("mutation"), max_examples=10)
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
        "--xfails",
        default=None,
        metavar="FILE",
        help=f"tests expected to fail (a port in progress): one a line, {xfails.FORMAT} (tests/xfails.py)",
    )
    parser.addoption(
        "--outcomes",
        default=None,
        metavar="PATH",
        help="write every test's outcome (and skip reason or first failure line), the tests selected and the number "
        "deselected to PATH as JSON, for ci/gate",
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


XFAILS: dict[str, xfails.Entry] = {}  # --xfails, read in every process (the controller, each worker)
XFAILS_SECTION = "not the failure listed in --xfails"  # the title of a failing listed test's report section


def settings_of(config: pytest.Config) -> Config:
    """The run's settings: the environment's, overridden by --impl, --profile and --coverage-out; a bad
    profile is a usage error, before any test."""
    try:
        base = Config.from_env()
        profile = config.getoption("--profile")
        parsed = parse_profile(profile) if profile is not None else base.profile
    except ProfileError as exc:
        raise pytest.UsageError(f"--profile: {exc}") from None
    out = config.getoption("--coverage-out")
    coverage_out = Path(out) if out else base.coverage_out
    return replace(
        base, impl=config.getoption("--impl") or base.impl, profile=parsed, coverage_out=coverage_out.resolve() if coverage_out else None
    )


def pytest_configure(config: pytest.Config) -> None:
    run = settings_of(config)
    limit_shrinking(run.shrink_seconds)
    harness.configure(run, config.getoption("--transcript"))
    os.environ.update(run.child_env())  # the edge: subprocesses a test starts inherit the run's settings
    if run.announced is not None and run.impl.startswith("exec:"):
        first_hello(run.impl[len("exec:") :], run.announced.split())  # the gate's first session's: every driver session here must announce it
    if config.getoption("--xfails"):
        path = config.getoption("--xfails")
        try:
            with open(path, encoding="utf-8") as listed:
                XFAILS.update(xfails.parse(listed.read(), path))
        except (OSError, xfails.BadEntry) as exc:
            raise pytest.UsageError(f"--xfails: {exc}") from None


# Run order: the cheap, broad tests first (the seed's catalog, the vectors), the long ones last (the
# catalog's 10^4-operation run, the machines), so a run that stops at its first failure (-x: the mutant
# runners, mutmut, the gate's first pass) reaches its verdict early.
# test_hybrid.py's hand tests (a fraction of a second; its machines are stateful, so last) kill the hybrid
# mutants (s60..s64) that the catalog's hybrid twin does not.
ORDER = ("test_catalog.py", "test_hybrid.py", "test_vectors.py", "test_errors.py", "test_allocation.py", "test_fork.py", "test_data.py", "test_widths.py")
LONG = ("test_random_ops_conserve_blocks",)
LAST = ("test_gate.py", "test_verdict.py")  # each runs a whole gate in a subprocess: minutes where a direct test takes seconds
# Before all of them, the constructor's argument order, which builds no cache: a bug that lets
# 2^31 blocks through (say mutmut's `name == "XXnum_blocksXX"` in as_sizes) fails there at once,
# where the vector that asks for 2^31 blocks would build an allocator of 2^31 ids and exhaust
# the machine (mutmut saw a segfault or a timeout, by the order its test set came in).
FIRST = ("test_which_constructor_error_wins",)


def run_rank(item: pytest.Item) -> tuple[bool, bool, int]:
    long = item.get_closest_marker("stateful") is not None or item.name in LONG or item.path.name in LAST
    first = getattr(item, "originalname", item.name) in FIRST
    return long, not first, ORDER.index(item.path.name) if item.path.name in ORDER else len(ORDER)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=run_rank)
    if not hasattr(config, "workerinput"):  # under xdist the controller checks, in the hook below
        refuse_wide_xfails([item.nodeid for item in items])
    if not harness.is_wire():
        return
    for item in items:
        if item.get_closest_marker("python_surface"):
            item.add_marker(pytest.mark.skip(reason=PYTHON_SURFACE))
        elif item.get_closest_marker("bench"):
            item.add_marker(pytest.mark.skip(reason=skips.BENCHMARK))


ENGINE_CALLS = "engine_calls"  # the user property (and outcomes field): calls into the engine during the test
ENGINE_BEFORE = pytest.StashKey[int | None]()


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


NEEDS = "needs"  # the user property (and outcomes field): the capabilities the test needs, comma-separated


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[ENGINE_BEFORE] = engine_calls()
    needs = sorted({cap for mark in item.iter_markers("needs") for cap in mark.args})
    if needs:
        item.user_properties.append((NEEDS, ",".join(needs)))
    for mark in item.iter_markers("needs"):
        missing = set(mark.args) - harness.capabilities()
        if missing:
            pytest.skip(missing_capability(missing))
    harness.begin_example()


def refuse_wide_xfails(nodeids: list[str]) -> None:
    problems = xfails.too_wide(XFAILS, nodeids)
    if problems:
        raise pytest.UsageError("--xfails: " + "\n".join(problems))


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
        fail(report, f"outcome=passed, but should be the failure {listed.where} lists, {listed.expects!r} [{report.nodeid}]: "
                     "xfails are strict, so a listed test that passes fails; take its entry off the list")


def judge_unlisted(report: pytest.TestReport) -> None:
    """Outcomes only the suite may give: an expected failure the suite did not list (pytest's XFailed,
    raised by the implementation), and a skip for a reason that is none of the suite's own (unittest.SkipTest
    on input the implementation cannot handle, say), each made a failure."""
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


def fail(report: pytest.TestReport, message: str) -> None:
    report.outcome, report.longrepr = "failed", message


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    """How many calls the test made into the engine's own code, from its set-up to the end of its call,
    as a user property of its report (which xdist carries to the controller)."""
    yield
    before, after = item.stash.get(ENGINE_BEFORE, None), engine_calls()
    if before is not None and after is not None:
        item.user_properties.append((ENGINE_CALLS, after - before))


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


OUTCOMES: dict[str, dict[str, Any]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test's outcome, for --outcomes (under xdist, the controller sees every worker's reports)."""
    entry = OUTCOMES.setdefault(report.nodeid, {"outcome": "passed"})
    entry.update((name, value) for name, value in report.user_properties if name in (ENGINE_CALLS, NEEDS))
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


# What --outcomes records beside each test's outcome, so that ci/gate can check every selected test has one:
# the tests pytest selected to run (under xdist, as a worker collected them) and how many it deselected.
SELECTED: list[str] = []
DESELECTED: list[int] = [0]


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped as a whole (`allow_module_level`) counts as one skip, as pytest's summary counts it."""
    if report.skipped:
        longrepr = report.longrepr
        OUTCOMES[report.nodeid] = {"outcome": "skipped", "detail": str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)}


def pytest_collection_finish(session: pytest.Session) -> None:
    SELECTED[:] = [item.nodeid for item in session.items]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist, the controller's view of a worker's collection: the tests selected (every worker
    collects the same), and the refusal of an --xfails entry that names several of them."""
    SELECTED[:] = list(ids)
    refuse_wide_xfails(ids)


def pytest_deselected(items: list[pytest.Item]) -> None:
    DESELECTED[0] += len(items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    DESELECTED[0] = max(DESELECTED[0], int(getattr(node, "workeroutput", {}).get("deselected", 0)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    harness.stop_drivers()
    if hasattr(session.config, "workerinput"):  # an xdist worker: its deselections go to the controller
        session.config.workeroutput["deselected"] = DESELECTED[0]  # type: ignore[attr-defined]
    path = session.config.getoption("--outcomes")
    if path and not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist) writes it
        import json

        with open(path, "w", encoding="utf-8") as out:
            json.dump({"selected": SELECTED, "deselected": DESELECTED[0], "tests": OUTCOMES}, out, indent=1)


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
