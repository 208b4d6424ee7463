"""Integer widths: CONTRACT.md's "Integer ranges" at the boundaries of 8, 16 and 32-bit types, as
the `range-*` conformance vectors (sequence ids past 32 bits, block ids and lengths past 16,
a reference count past 16, a flat index past 32 bits in a lazily zeroed pool). A port that
narrows a type passes every small test and fails here. Marked `widths`: mutmut leaves them to
the suite run (they cannot see a mutant of paged/ that the rest misses, and cost time).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.vector_files import check_vector, params

pytestmark = pytest.mark.widths


@pytest.mark.parametrize("path", params(widths=True))
def test_vector(path: Path) -> None:
    check_vector(path)
