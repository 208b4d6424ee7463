"""The page-table rows (issue 51): the exports for a batch of decoding sequences, and the NumPy paged decode.

Both at SmolLM2's geometry, one layer: `kernel_batch` sequences of `kernel_len` tokens each, written block by
block side by side (each one's blocks lie among the others', as decoding leaves them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from paged.attention import attend, decode

from .sizes import B, D, H, L, Sizes
from .timing import Result, Side, race, ratio

QUERY_HEADS = 9  # SmolLM2-135M: 9 query heads over its 3 KV heads


def decoding_batch(impl: Any, s: Sizes, rng: np.random.Generator) -> tuple[Any, np.ndarray, np.ndarray]:
    """A cache whose layer 0 holds `kernel_batch` sequences of `kernel_len` tokens (the other layers stay empty:
    NumPy's zeroed pools cost no memory until written), and each one's K and V, `[n, H, len, D]`."""
    n, length = s.kernel_batch, s.kernel_len
    cache = impl.PagedKVCache(n * -(-length // B), B, L, H, D)
    k, v = (rng.integers(0, 0x3C00, (n, H, length, D), dtype=np.uint16).view(np.float16) for _ in "kv")
    for seq in range(n):
        cache.add_seq(seq)
    for pos in range(0, length, B):
        for seq in range(n):
            cache.append(seq, 0, k[seq, :, pos : pos + B], v[seq, :, pos : pos + B])
    return cache, k, v


def numpy_page_table(cache: Any, seqs: list[int], layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """page_table(seqs, layer) as a caller builds it from the public block_table and seq_len (full attention,
    P = B): the tables padded into one array, the pages each length needs cut out of it."""
    lens = np.array([cache.seq_len(s, layer) for s in seqs], dtype=np.int64)
    tables = [cache.block_table(s, layer) for s in seqs]
    width = max((len(t) for t in tables), default=0)
    padded = np.zeros((len(seqs), width), dtype=np.int32)
    for row, table in zip(padded, tables):
        row[: len(table)] = table
    pages = -(-lens // B)
    indptr = np.zeros(len(seqs) + 1, dtype=np.int32)
    np.cumsum(pages, out=indptr[1:])
    indices = padded[np.arange(width)[None, :] < pages[:, None]]
    last = np.where(pages > 0, lens - (pages - 1) * B, 0).astype(np.int32)
    return indptr, indices, last


def bench_page_table(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """page_table for the whole batch against the same arrays built with NumPy from block_table and seq_len
    (checked equal first), then the paged decode over them against dense attention over contiguous arrays."""
    cache, k, v = decoding_batch(impl, s, rng)
    seqs = list(range(s.kernel_batch))
    exports = cache.page_table(seqs, 0)
    built = numpy_page_table(cache, seqs, 0)
    for name, got, want in zip(("indptr", "indices", "last_page_len"), exports, built):
        assert np.array_equal(got, want), f"page_table's {name} differs from the one built from block_table"
    paged, numpy_side = race(Side(lambda: cache.page_table(seqs, 0)), Side(lambda: numpy_page_table(cache, seqs, 0)), s.repeats, s.warmup)
    what = f"one layer, {s.kernel_batch} sequences of {s.kernel_len} tokens, P = B"
    rows = [ratio("page_table_vs_numpy", paged, numpy_side, "NumPy from block_table", what)]

    q = rng.standard_normal((s.kernel_batch, QUERY_HEADS, D)).astype(np.float32)
    k_pages, v_pages = cache.kv_pages(0)
    scale = 1 / math.sqrt(D)
    got = decode(q, k_pages, v_pages, *exports, scale=scale)
    want, _ = attend(q, k, v, scale)
    assert np.allclose(got, want, rtol=0, atol=1e-3), "the paged decode differs from dense attention"
    paged_decode = Side(lambda: decode(q, k_pages, v_pages, *exports, scale=scale))
    dense = Side(lambda: attend(q, k, v, scale))
    race(paged_decode, dense, s.step_repeats, s.warmup)
    what = f"{QUERY_HEADS} query heads, one layer, {s.kernel_batch} sequences of {s.kernel_len} tokens"
    rows.append(ratio("paged_decode_vs_dense", paged_decode, dense, "dense NumPy", what))
    cache.close()
    return rows
