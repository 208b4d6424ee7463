"""--covered PATH: the tests that would run again what the whole gate's early steps ran (the vectors it
replayed, the explorer's geometries it walked: testkit/covered.py) are deselected, and counted apart
(`COUNT`, which the outcomes record carries) so that the gate's verdict says which steps covered them.
A test says what it runs by its marks: `vector(NAME)` replays the vector file NAME, `walk(GEOMETRY, DEPTH)`
walks the explorer's geometry to DEPTH."""

from __future__ import annotations

import pytest

from testkit import covered

COUNT = [0]  # the tests this process deselected for --covered


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--covered",
        default=None,
        metavar="PATH",
        help="deselect the tests that replay a vector or walk a geometry the gate's early steps already ran, as "
        "listed in PATH (JSON, written by the gate: testkit/covered.py)",
    )


def ran_before(item: pytest.Item, done: covered.Covered) -> bool:
    vector, walk = item.get_closest_marker("vector"), item.get_closest_marker("walk")
    return (vector is not None and done.covers_vector(vector.args[0])) or (walk is not None and done.covers_walk(*walk.args))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("--covered")
    if not path:
        return
    try:
        done = covered.read(path)
    except (OSError, ValueError, KeyError) as exc:
        raise pytest.UsageError(f"--covered: {exc}") from None
    dropped = [item for item in items if ran_before(item, done)]
    if dropped:
        COUNT[0] += len(dropped)
        config.hook.pytest_deselected(items=dropped)
        gone = set(dropped)
        items[:] = [item for item in items if item not in gone]
