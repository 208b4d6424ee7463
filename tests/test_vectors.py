"""The conformance vectors (ci/vectors/*.txt) but the integer ranges (test_widths.py), replayed
against the implementation under test (tests/vector_files.py says how); and the corpus must be
what the generator writes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vector_files import FILES, VECTORS, check_vector, params


@pytest.mark.parametrize("path", params(widths=False))
def test_vector(path: Path) -> None:
    check_vector(path)


def test_the_corpus_is_what_the_generator_writes() -> None:
    assert FILES, "ci/vectors has no vectors"
    run = subprocess.run([sys.executable, str(VECTORS / "generate"), "--check"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
