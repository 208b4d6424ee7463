"""The conformance vectors (ci/vectors/*.txt) as pytest parameters, and the replay of one of them
against the implementation under test: shared by test_vectors.py (every vector but the integer
ranges) and test_widths.py (the `range-*` vectors).

Each vector is a transcript written by `ci/vectors/generate` from the oracle's answers; it is
replayed as in a fresh session (the Python module served in-process the way `python -m
wire.driver` serves it; a driver, one session for many vectors, renumbered: `wire.replay.Replayer`),
and the first answer that does not match fails the test, saying what differs. A vector whose
answers depend on a profile option names its values (`# profile:`); the one written for the port's values is replayed, the others are skipped.
Under allocation=any, tables match up to a renaming of block ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import harness
from tests.assertions import assert_no_difference
from testkit.locate import vector_files, vectors_dir
from wire.transcript import read, read_header

VECTORS = vectors_dir()  # the checkout's ci/vectors, or the copy an installed gate ships
FILES = vector_files()


def params(widths: bool) -> list[Any]:
    """The vectors of the integer ranges (`range-*`) if `widths`, else every other vector; each marked as
    replaying its file (`vector`) and as needing what its `requires` names (a port without it skips it, as the
    replay would)."""
    return [
        pytest.param(p, id=p.stem, marks=[pytest.mark.vector(p.name), *([pytest.mark.needs(*needs)] if (needs := read_header(p).requires) else [])])
        for p in FILES if p.name.startswith("range-") == widths
    ]


def check_vector(path: Path) -> None:
    transcript = read(path)
    mismatch, skipped = harness.replayer().replay(transcript, harness.profile())
    if skipped:
        pytest.skip(skipped)
    assert_no_difference(
        mismatch and str(mismatch),
        f"\nvector {transcript.meta.get('id')}: {transcript.meta.get('comment')} [flags: {transcript.meta.get('flags')}]\n"
        f"replay it alone: ci/gate --replay {path.relative_to(VECTORS.parent.parent)} --impl ...",
    )
