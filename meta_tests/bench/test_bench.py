"""The benchmark still runs: `ci/bench --quick --json PATH` reports every key as a finite number, with its target.

Never checks a speed: timings on shared machines are noise for a test, the targets are
judged by reading the full run's table (docs/PERFORMANCE.md, Figures).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KEYS = (
    "gather_vs_copy",
    "gather_vs_floor",
    "gather_scattered_vs_copy",
    "gather_scattered_vs_floor",
    "gather_scattered_tail_vs_copy",
    "gather_scattered_tail_vs_floor",
    "decode_gather_vs_copy",
    "decode_gather_vs_floor",
    "prefill_append_vs_contiguous",
    "prefill_append_vs_floor",
    "prefill_fragmented_vs_contiguous",
    "prefill_fragmented_vs_floor",
    "decode_append_vs_contiguous",
    "decode_append_vs_floor",
    "beam4_time_vs_contiguous",
    "beam4_memory_vs_contiguous",
    "memory_utilization_paged",
    "memory_utilization_contiguous",
    "decode_scaling_seqs",
    "decode_scaling_length",
    "gather_scaling",
    "prefix_shared_served_of_possible",
    "prefix_shared_served_fraction",
    "prefix_shared_blocks_on_vs_off",
    "prefix_chat_served_of_possible",
    "prefix_chat_served_fraction",
    "prefix_chat_blocks_on_vs_off",
    "prefix_lookup_scaling_length",
    "prefix_lookup_scaling_cache",
    "page_table_vs_numpy",
    "paged_decode_vs_dense",
)
REPORTED_ONLY = (
    "gather_scattered_vs_copy",  # scattered blocks: NumPy's take is the floor, reported against memcpy
    "gather_scattered_tail_vs_copy",
    "decode_gather_vs_copy",
    "prefill_fragmented_vs_contiguous",
    "decode_append_vs_floor",  # per-call Python work the contract asks for (docs/PERFORMANCE.md)
    "memory_utilization_contiguous",
    "prefix_shared_served_fraction",
    "prefix_shared_blocks_on_vs_off",
    "prefix_chat_served_of_possible",
    "prefix_chat_served_fraction",
    "prefix_chat_blocks_on_vs_off",
)  # every other key has a target in the JSON


@pytest.mark.bench
def test_quick_bench_reports_every_key(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, str(REPO / "ci" / "bench"), "--quick", "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    for key in KEYS:
        assert key in report, f"{key} missing from the JSON"
        value = report[key]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
        assert math.isfinite(value), (key, value)
        assert key in run.stdout, f"{key} missing from the printed table"
        if key not in REPORTED_ONLY:
            assert report["details"][key]["target"], f"{key} has no target in the JSON"
        else:
            assert report["details"][key]["target"] is None, f"{key} is reported only, yet has a target"
