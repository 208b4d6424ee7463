"""Where the verification suite lives: the folder that holds `tests/`, `ci/vectors/` and the
`pyproject.toml` that configures pytest.

In a source checkout (and an editable install) that is the checkout itself. A wheel (`pip install
<checkout or git URL>`) ships a copy of those files inside this package, as `testkit/_suite/`
(setup.py), laid out as in the checkout, so that the tests find what they need at the same relative
paths and pytest names every test as it does in the checkout (`tests/test_x.py::...`).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIPPED = HERE / "_suite"  # written into the wheel by setup.py; never present in a checkout


def suite_root() -> Path:
    """The folder holding tests/, ci/vectors/ and pyproject.toml."""
    return SHIPPED if SHIPPED.is_dir() else HERE.parent


def vectors_dir() -> Path:
    """The conformance vectors (ci/vectors/*.txt), for the gate and for tests/test_vectors.py alike."""
    return suite_root() / "ci" / "vectors"


def vector_files() -> list[Path]:
    """Every conformance vector, in name order."""
    return sorted(vectors_dir().glob("*.txt"))
