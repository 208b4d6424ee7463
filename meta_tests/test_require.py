"""`--require CAPS` (issue 52): a port's CI states the capabilities it must be gated on; an implementation
that does not announce one of them gets FAIL (exit 1) naming it, before any step, whatever the others say."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VECTOR = ROOT / "ci" / "vectors" / "allocation-lowest-free.txt"  # one short transcript: the run's one step
NO_HYBRID = """from paged import OutOfBlocks
from paged import PagedKVCache as Base


class PagedKVCache(Base):
    def __init__(self, num_blocks, block_size, n_layers, n_kv_heads, d_head, *, prefix_caching=False):
        super().__init__(num_blocks, block_size, n_layers, n_kv_heads, d_head, prefix_caching=prefix_caching)
"""

pytestmark = pytest.mark.gate


def gate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "no_hybrid.py").write_text(NO_HYBRID)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    impl = f"exec:{sys.executable} -m wire.driver --impl no_hybrid"
    cmd = [sys.executable, "-m", "paged_gate", "--impl", impl, "--replay", str(VECTOR), *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_a_required_capability_not_announced_fails_naming_it(tmp_path: Path) -> None:
    run = gate(tmp_path, "--require", "prefix_caching,hybrid")
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "FAIL ===\n--require hybrid: the implementation does not announce hybrid" in run.stdout, run.stdout[-2000:]
    assert "prefix_caching:" not in run.stdout.split("=== gate verdict")[-1]  # announced: not named


def test_every_required_capability_announced_runs_the_steps(tmp_path: Path) -> None:
    run = gate(tmp_path, "--require", "prefix_caching")
    assert run.returncode == 0 and ": PASS, the transcript allocation-lowest-free.txt only" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_an_unknown_capability_is_a_usage_error(tmp_path: Path) -> None:
    run = gate(tmp_path, "--require", "windows")
    assert run.returncode == 2 and "--require: windows is no capability" in run.stderr, run.stderr[-2000:]
