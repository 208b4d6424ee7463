"""`ci/bench` (`python -m bench`): the options, every row in order, the table, the JSON and the plot."""

from __future__ import annotations

import argparse
import importlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import bench

from .kernel_rows import bench_page_table
from .prefix_rows import bench_chat, bench_lookup, bench_shared_prompt
from .report import met, plot, table
from .rows import bench_beam4, bench_decode, bench_decode_gather, bench_gather, bench_memory, bench_prefill, bench_scaling_gather, bench_scaling_length, bench_scaling_seqs
from .sizes import B, BLOCK_BYTES, D, FULL, H, L, QUICK, SEED, TARGETS
from .timing import Result, last_level_cache, steady_malloc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ci/bench", description=(bench.__doc__ or "").splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="write every ratio (and the timings) as JSON")
    parser.add_argument("--plot", metavar="PATH", help="draw memory held against live sequences as a PNG")
    parser.add_argument("--quick", action="store_true", help="a smaller run, in seconds")
    parser.add_argument("--impl", default="paged", help="module exporting PagedKVCache (default: paged)")
    args = parser.parse_args(argv)
    s = QUICK if args.quick else FULL
    impl = importlib.import_module(args.impl)
    malloc = steady_malloc()
    rng = np.random.default_rng(SEED)
    started = time.perf_counter()

    results: list[Result] = []
    results += bench_gather(impl, s, rng)
    results += bench_gather(impl, s, rng, scattered=True)
    results += bench_gather(impl, s, rng, scattered=True, tail=True)
    results += bench_decode_gather(impl, s, rng)
    results += bench_prefill(impl, s, rng)
    results += bench_prefill(impl, s, rng, fragmented=True)
    results += bench_decode(impl, s, rng)
    results.extend(bench_beam4(impl, s, rng))
    paged_util, cont_util, held = bench_memory(impl, s, rng)
    results += [paged_util, cont_util]
    results.append(bench_scaling_seqs(impl, s, rng))
    results.append(bench_scaling_length(impl, s, rng))
    results.append(bench_scaling_gather(impl, s, rng))
    results += bench_shared_prompt(impl, s, rng)
    results += bench_chat(impl, s, rng)
    results += bench_lookup(impl, s, rng)
    results += bench_page_table(impl, s, rng)
    results.sort(key=lambda r: list(TARGETS).index(r.key))
    wall = time.perf_counter() - started

    print(f"ci/bench{' --quick' if args.quick else ''}: impl {args.impl}, L={L} H={H} D={D} float16, "
          f"block_size {B}, {malloc}, {wall:.1f} s")
    print(table(results))
    if args.json:
        out: dict[str, Any] = {r.key: r.value for r in results}
        out["details"] = {
            r.key: {
                "target": f"{TARGETS[r.key][0]} {TARGETS[r.key][1]}" if TARGETS[r.key][1] is not None else None,
                "verdict": met(r.key, r.value),
                "what": r.unit or r.note,
                **({
                    "paged_median_s": r.paged.median / r.per_paged, "paged_min_s": r.paged.minimum / r.per_paged,
                    "against": r.ref_name,
                    "against_median_s": r.ref.median / r.per_ref, "against_min_s": r.ref.minimum / r.per_ref,
                    "ratio_of_minima": (r.paged.minimum / r.per_paged) / (r.ref.minimum / r.per_ref),
                    "calls": len(r.paged.times),
                } if r.paged is not None and r.ref is not None else {}),
            }
            for r in results
        }
        out["config"] = {"quick": args.quick, "impl": args.impl, "n_layers": L, "n_kv_heads": H, "d_head": D,
                         "block_size": B, "block_bytes": BLOCK_BYTES, "malloc": malloc, "last_level_cache": last_level_cache(),
                         "sizes": s.__dict__, "wall_s": wall}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    if args.plot:
        plot(held, args.plot, s)
    return 0
