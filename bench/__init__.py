"""Benchmark: the paged cache against the contiguous cache and the memory-copy limit.

    ci/bench [--json PATH] [--plot PATH] [--quick] [--impl MODULE]     (or python -m bench)

Everything runs at SmolLM2's KV geometry (30 layers, 3 KV heads, 64 dims, float16)
with block_size 16, and every comparison is measured side by side in one run:

- Both sides get the very same input arrays (float16, made before any timing).
- Untimed set-up and tear-down surround every timed call; the paged pool is made once,
  large enough, and every page of it is written through the public API before timing
  (NumPy's zeroed pools are paged in lazily by the OS); contiguous sequences are
  touched the same way before their timed writes.
- Both sides warm up, then alternate call by call (A B, B A, ...) so that drift and
  the other process on the shared cores fall on both; the garbage collector is off
  while timing. Each side keeps the minimum and the median of many calls; a ratio is
  median over median (the minima are reported beside it).
- Every copy row (gather, prefill, decode) races a third side, its NumPy floor: the bare
  NumPy calls the same copy needs (a slice for consecutive block ids, else `take` or an
  index assignment of the same slabs), on pools of the floor's own laid out as the paged
  cache's, with the ids of the paged table. `*_vs_floor` is what the cache adds to NumPy.

Rows: gather against np.copy (blocks in id order; scattered, whole blocks and with a part-full
last block; a decode step's gathers with 64 sequences decoding side by side), prefill against
the contiguous cache (into a fresh pool and into a fragmented one), decode and beam search
against it, memory held, how costs scale with live sequences and lengths, and the page tables for
kernels (page_table against NumPy from block_table; the NumPy paged decode against dense attention). Targets and
what the figures mean: docs/PERFORMANCE.md.

The paged side uses the public API only (PagedKVCache, stats()); a block's bytes are
2 (K, V) x L x H x B x D x 2. `--impl` (default `paged`) benchmarks
another module that exports PagedKVCache, a port for instance.
"""
