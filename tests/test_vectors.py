"""The conformance vectors (ci/vectors/*.txt), replayed against the implementation under test.

Each vector is a transcript written by `ci/vectors/generate` from the oracle's answers; it
is replayed in a fresh session (a new driver process, or the Python module served
in-process the way `python -m paged.driver` serves it), and the first answer that does not
match fails the test, saying what differs. The corpus must be what the generator writes.
The `range-*` vectors are the integer ranges of CONTRACT.md (marked `widths`). A vector whose
answers depend on a profile option names its values (`# profile:`); the one written for the
port's values is replayed, the others are skipped. Under allocation=any, tables match up to
a renaming of block ids.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import harness
from paged_gate.locate import vector_files, vectors_dir
from wire.client import Session
from wire.transcript import read, replay, written_for_another

VECTORS = vectors_dir()  # the checkout's ci/vectors, or the copy an installed gate ships
FILES = vector_files()


def marks(path: Path) -> list[pytest.MarkDecorator]:
    return [pytest.mark.widths] if path.name.startswith("range-") else []


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=marks(p)) for p in FILES])
def test_vector(path: Path) -> None:
    transcript = read(path)
    session = Session(harness.impl_name())
    try:
        missing = set(transcript.requires) - session.capabilities
        if missing:
            pytest.skip(f"needs the capability {', '.join(sorted(missing))}")
        other = written_for_another(transcript, harness.profile())
        if other:
            pytest.skip(other)
        mismatch = replay(transcript, session.send, exact_ids=harness.profile().exact_ids)
    finally:
        session.close()
    assert mismatch is None, (
        f"{mismatch}\nvector {transcript.meta.get('id')}: {transcript.meta.get('comment')} [flags: {transcript.meta.get('flags')}]\n"
        f"replay it alone: ci/gate --replay {path.relative_to(VECTORS.parent.parent)} --impl ..."
    )


def test_the_corpus_is_what_the_generator_writes() -> None:
    assert FILES, "ci/vectors has no vectors"
    run = subprocess.run([sys.executable, str(VECTORS / "generate"), "--check"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
