"""`ci/gpu` runs here: where CUDA, torch or flashinfer is missing it says, in one line, that it was skipped and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_ci_gpu_says_it_was_skipped_and_why_or_passes() -> None:
    """Skipped: exactly one line naming what is missing, exit 0. On a machine with all of it: its PASS line."""
    run = subprocess.run([sys.executable, str(REPO / "ci" / "gpu")], cwd=REPO, capture_output=True, text=True, timeout=1800)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    if lines[:1] and lines[0].startswith("ci/gpu: skipped: "):
        assert len(lines) == 1 and run.stderr == "", run.stdout + run.stderr
        assert any(what in lines[0] for what in ("torch", "CUDA", "flashinfer")), lines[0]
    else:
        assert lines[-1:] == ["ci/gpu: PASS"], run.stdout + run.stderr
