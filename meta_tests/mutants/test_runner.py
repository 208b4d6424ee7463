"""The planted-mutant runner's confirm run (mutants/runner.py): a kill stands only when the test that made it passes
on the unmutated snapshot, under the same selection; a test that fails there, or is not collected, means no score."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mutants import runner
from mutants.fork_server import ForkServers
from testkit.config import Config

TESTS = """def test_passes():
    pass


def test_fails():
    assert False
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An unmutated snapshot with two tests of its own beside the suite: one passes, one fails."""
    root = tmp_path_factory.mktemp("confirm") / "clean"
    runner.snapshot(root)
    (root / "tests" / "test_zz_confirm.py").write_text(TESTS, encoding="utf-8")
    return root


@pytest.fixture(scope="module", params=["fresh processes", "fork server"])
def servers(request: pytest.FixtureRequest) -> Iterator[ForkServers | None]:
    if request.param == "fresh processes":
        yield None
    else:
        with ForkServers() as started:
            yield started


def killed_by(*tests: str) -> list[runner.Result]:
    return [runner.Result(f"s{i}", "a mutant", "killed", f"tests/test_zz_confirm.py::{test}", 1.0) for i, test in enumerate(tests)]


@pytest.mark.parametrize(
    ("tests", "confirmed", "says"),
    [
        (("test_passes",), True, "confirm run: the 1 tests that killed a mutant pass on the unmutated code"),
        (("test_passes", "test_fails"), False, "does not pass on the unmutated code (tests/test_zz_confirm.py::test_fails failed)"),
        (("test_gone",), False, "does not pass on the unmutated code (guard: MISMATCH not collected: tests/test_zz_confirm.py::test_gone"),
    ],
)
def test_a_kill_stands_only_when_its_test_passes_on_the_unmutated_code(
    base: Path, tests: tuple[str, ...], confirmed: bool, says: str, capsys: pytest.CaptureFixture[str], servers: ForkServers | None
) -> None:
    target = runner.Target("python", Config())
    assert runner.confirmed(base, target, ["tests/test_zz_confirm.py"], killed_by(*tests), workers=0, servers=servers) is confirmed
    out = capsys.readouterr()
    assert says in (out.out if confirmed else out.err), out
