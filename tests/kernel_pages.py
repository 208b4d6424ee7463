"""Checking a cache's page tables for kernels (CONTRACT.md, "Page tables for kernels") against the oracle.

`assert_page_tables` is what every state machine checks after a step, for the sequences it touched, and what
tests/test_page_tables.py checks after each call of its scenarios: for every layer and two page sizes (B, and
the largest P below B that divides it), `page_table` over the batch is the oracle's, array for array; the slot
mapping of the layer's positions is the oracle's (tests/test_page_tables.py varies `start`);
and the pages the cache's own `kv_pages` hold at its own indices, read back (the last page cut to
`last_page_len`, the first page's leading a % P positions dropped), are `gather` bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oracle import ModelKVCache
from tests import harness
from tests.assertions import assert_equal, assert_same_bits

CAPABILITY = "page_tables"


def smaller_page(block_size: int) -> int | None:
    """The largest page size below B that divides B (None for B = 1)."""
    return next((p for p in range(block_size // 2, 0, -1) if block_size % p == 0), None)


def page_sizes(block_size: int) -> list[int | None]:
    """The page sizes checked: None (B, the default) and the largest P below B dividing it, if any."""
    smaller = smaller_page(block_size)
    return [None] if smaller is None else [None, smaller]


def read_back(pages: np.ndarray, indptr: np.ndarray, indices: np.ndarray, last: np.ndarray, i: int, skip: int) -> np.ndarray:
    """Sequence i's positions `[H, n, D]` read through the page table from `pages` `[N', H, P, D]`: its pages in
    order, the last one cut to last_page_len[i], the first `skip` (a % P) positions dropped."""
    mine = pages[indices[indptr[i] : indptr[i + 1]]]  # [pages, H, P, D]
    heads, size, dims = pages.shape[1], pages.shape[2], pages.shape[3]
    kv_len = (len(mine) - 1) * size + int(last[i]) if len(mine) else 0
    flat = mine.transpose(1, 0, 2, 3).reshape(heads, len(mine) * size, dims)
    out: np.ndarray = flat[:, skip:kv_len]
    return out


def announced() -> bool:
    """Whether the implementation under test announces page tables for kernels."""
    return CAPABILITY in harness.capabilities()


def assert_dtype(what: str, got: np.ndarray, dtype: type, call: str) -> None:
    """An export's dtype (compared as a name only when it differs: naming one costs more than the check)."""
    __tracebackhide__ = True
    if got.dtype != dtype:
        assert_equal(f"{what}.dtype", str(got.dtype), np.dtype(dtype).name, call)


def assert_page_tables(cache: Any, model: ModelKVCache, seqs: list[int], when: str = "", gathers: dict[tuple[int, int], Any] | None = None) -> None:
    """The cache's page tables, slot mappings and pages for `seqs` (live) are the oracle's, and its pages read back
    are its gathers (`gathers`: (the cache's (k, v), the oracle's) for (seq, layer), read and compared already;
    else read here)."""
    __tracebackhide__ = True
    if not seqs:
        return
    for layer in range(model.n_layers):
        shown = {s: gathers[s, layer] if gathers is not None else (cache.gather(s, layer), model.gather(s, layer)) for s in seqs}
        for size in page_sizes(model.block_size):
            p = model.block_size if size is None else size
            label = f"page_table({seqs}, {layer}{'' if size is None else f', {size}'})"
            got = cache.page_table(seqs, layer) if size is None else cache.page_table(seqs, layer, size)
            want = model.page_table(seqs, layer, size)
            for name, g, w in zip(("indptr", "indices", "last_page_len"), got, want):
                assert_dtype(f"{label} {name}", g, np.int32, label + when)
                assert_equal(f"{label} {name}", g, w, label + when)
            indptr, indices, last = got
            pages = cache.kv_pages(layer) if size is None else cache.kv_pages(layer, size)
            for i, s in enumerate(seqs):
                (k, v), (want_k, _) = shown[s]
                skip = (model.length(s, layer) - want_k.shape[1]) % p  # the first shown position a, modulo P
                for name, pool, g in zip("kv", pages, (k, v)):
                    what = f"{name}_pages read through {label}'s row {i} (sequence {s})"
                    assert_same_bits(what, read_back(pool, indptr, indices, last, i, skip), g, f"kv_pages({layer}, {p}) against gather({s}, {layer}){when}")
        for s in seqs:
            n = model.length(s, layer)
            call = f"slot_mapping({s}, {layer}, 0, {n})"
            slots = cache.slot_mapping(s, layer, 0, n)
            assert_dtype(call, slots, np.int64, call + when)
            assert_equal(call, slots, model.slot_mapping(s, layer, 0, n), call + when)
