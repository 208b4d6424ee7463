"""--needing CAPABILITY (tests/plugins/implementation.py): the tests a narrowed engine gate runs
(mutants/engines/runner.py, `narrowing`) are exactly those marked as needing the capability, the
vectors among them by their `requires`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.locate import vector_files
from wire.transcript import read_header

REPO = Path(__file__).resolve().parent.parent


def collected(*args: str) -> list[str]:
    """The test ids `pytest --collect-only tests` lists, with `args`, against the reference cache."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--impl=paged", *args, "tests"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_needing_selects_the_tests_and_vectors_that_need_the_capability() -> None:
    every, needing = collected(), collected("--needing=sliding_window")
    want = sorted(p.stem for p in vector_files() if "sliding_window" in read_header(p).requires)
    got = sorted(i.split("[", 1)[1].rstrip("]") for i in needing if "::test_vector[" in i)
    assert got == want, f"vectors selected={got}, but should be those requiring sliding_window: {want}"
    window_file = [i for i in every if i.startswith("tests/test_window.py")]  # a module marked needs("sliding_window")
    assert window_file and set(window_file) <= set(needing), "--needing=sliding_window left out tests of test_window.py"
    others = [i for i in needing if i.startswith(("tests/test_fork.py", "tests/test_stateful.py", "tests/test_prefix.py"))]
    assert not others, f"--needing=sliding_window selected tests that are not marked as needing it: {others[:3]}"
    assert len(needing) < len(every)
