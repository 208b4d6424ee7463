"""The guard plugin of a mutant's pytest run: proof, inside that pytest process, that it tests the mutant.

mutants/pytest_run.py copies this file into the mutant's folder as `_mutant_guard.py`, writes what
to expect beside it (`_mutant_guard.json`), and loads it with `-p _mutant_guard`. At session start
it checks the run's `--impl`, imports the modules named to import (the adapter that loads an
engine, or `paged`), and checks that every module named was imported from the mutant's folder, not
from the work tree or an install. It writes `OK` or `MISMATCH ...` to `guard-report.txt`; a
mismatch stops the run (an error, never a kill). It also records the first test that fails, by its
node id, in `first-failure.txt`. When the expectation lists node ids (`only`: the runner's confirm run of the
tests that killed mutants), it keeps just those tests, and a listed id the selection does not collect is a mismatch.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPORT = HERE / "guard-report.txt"
FIRST_FAILURE = HERE / "first-failure.txt"


def from_here(name: str) -> bool:
    """Whether module `name` was imported from a file in this folder (symlinks to the files allowed:
    an engine's mirror is made of them)."""
    where = getattr(sys.modules.get(name), "__file__", None)
    if where is None:
        return False
    folder = os.path.realpath(os.path.dirname(os.path.abspath(str(where))))
    return (folder + os.sep).startswith(str(HERE) + os.sep)


def expected() -> dict[str, list[str] | str]:
    found: dict[str, list[str] | str] = json.loads((HERE / "_mutant_guard.json").read_text(encoding="utf-8"))
    return found


def problems(config: pytest.Config) -> list[str]:
    expect = expected()
    try:
        impl = config.getoption("--impl")
    except ValueError:
        return ["the suite's --impl option is not there (its plugin, tests/plugins/implementation.py, did not load)"]
    found = [] if impl == expect["impl"] else [f"--impl={impl}, expected {expect['impl']}"]
    for name in expect["import"]:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is the report's, not a crash
            found.append(f"import {name}: {exc!r}")
    for name in expect["modules"]:
        if not from_here(name):
            found.append(f"{name} from {getattr(sys.modules.get(name), '__file__', None)}, not from {HERE}")
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    found = problems(session.config)
    if found:
        REPORT.write_text("MISMATCH " + "; ".join(found) + "\n", encoding="utf-8")
        raise pytest.UsageError("mutants: the run does not test the mutant: " + "; ".join(found))
    REPORT.write_text("OK\n", encoding="utf-8")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    only = set(expected().get("only", []))
    if not only:
        return
    missing = only - {item.nodeid for item in items}
    if missing:
        REPORT.write_text(f"MISMATCH not collected: {', '.join(sorted(missing))}\n", encoding="utf-8")
        raise pytest.UsageError("mutants: tests to confirm were not collected: " + ", ".join(sorted(missing)))
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in only])
    items[:] = [item for item in items if item.nodeid in only]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and not FIRST_FAILURE.exists():  # in setup, call or teardown
        FIRST_FAILURE.write_text(report.nodeid, encoding="utf-8")
