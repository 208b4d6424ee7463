"""The conformance vectors (ci/vectors/*.txt) but the integer ranges (test_widths.py), replayed
against the implementation under test (tests/vector_files.py says how). That the committed corpus is
what the generator writes is the generator's own test (meta_tests/vectorgen/test_generator.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.vector_files import check_vector, params


@pytest.mark.parametrize("path", params(widths=False))
def test_vector(path: Path) -> None:
    check_vector(path)

