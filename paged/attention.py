"""A reference paged decode attention in NumPy: what a FlashInfer-style kernel computes from the page tables.

`decode` reads K and V through the exports of CONTRACT.md "Page tables for kernels" (`indptr`, `indices`,
`last_page_len` over an HND pool `[pages, H, P, D]`) a page at a time, never gathering a whole sequence:
each page gives a float32 softmax state (its output and the log-sum-exp of its scores), a sequence's page
states are merged by log-sum-exp (the online softmax, in its associative form), then with the new token's
own K and V (`merge_state`, as FlashInfer's): the decode order of the contract, attend over the exported
pages, fold the new token in, then append. Grouped-query heads: query head h reads KV head h // (Hq // H).

Positions a window does not show and slots past `last_page_len` are sliced away, never multiplied by a
mask: whatever an unread slot holds (NaN included) cannot reach the output.

`write_slots` is the write an engine makes through a slot mapping (vLLM's reshape_and_cache): a padding
slot of -1 is skipped, never used as an index.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]
State = tuple[F32, F32]  # (output [..., Hq, D], log-sum-exp of the scaled scores [..., Hq]), float32
PAGES_AT_ONCE = 256  # whole pages attended in one NumPy call: bounds the float32 copy of K and V


def attend(q: F32, k: NDArray[np.generic], v: NDArray[np.generic], scale: float) -> State:
    """Softmax attention of each query row over its own keys, float32: q `[n, Hq, D]`, k and v `[n, H, T, D]`
    with T >= 1. Returns the row's state: the output `[n, Hq, D]` and the log-sum-exp `[n, Hq]`."""
    n, hq, d = q.shape
    h = k.shape[1]
    grouped = (q * np.float32(scale)).reshape(n, h, hq // h, d)  # query heads by the KV head they read
    # C order whatever k and v's strides: a BLAS kernel may round differently for another memory layout
    kf, vf = np.ascontiguousarray(k, dtype=np.float32), np.ascontiguousarray(v, dtype=np.float32)
    scores = np.matmul(grouped, kf.swapaxes(2, 3))  # [n, H, G, T]
    peak = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - peak)
    total = weights.sum(axis=-1, keepdims=True)
    out = np.matmul(weights, vf) / total  # [n, H, G, D]
    lse = peak + np.log(total)
    return out.reshape(n, hq, d).astype(np.float32), lse.reshape(n, hq).astype(np.float32)


def merge_state(o_a: F32, lse_a: F32, o_b: F32, lse_b: F32) -> State:
    """The state of attention over two disjoint sets of keys from each set's state (FlashInfer's merge_state,
    natural log). A state over no key is (0, -inf); two of them merge into one."""
    top = np.maximum(lse_a, lse_b)
    top = np.where(np.isneginf(top), np.float32(0), top)  # both empty: keep the weights 0, not NaN
    w_a, w_b = np.exp(lse_a - top), np.exp(lse_b - top)
    total = w_a + w_b
    safe = np.where(total > 0, total, np.float32(1))
    out = (o_a * (w_a / safe)[..., None] + o_b * (w_b / safe)[..., None]).astype(np.float32)
    with np.errstate(divide="ignore"):
        lse = (top + np.log(total)).astype(np.float32)
    return out, lse


def _merge_runs(out: F32, lse: F32, counts: NDArray[np.intp]) -> State:
    """Merge consecutive runs of page states (`counts[i]` >= 1 pages for row i) into one state per row."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    top = np.maximum.reduceat(lse, starts)
    weights = np.exp(lse - np.repeat(top, counts, axis=0))
    total = np.add.reduceat(weights, starts)
    merged = np.add.reduceat(out * weights[..., None], starts) / total[..., None]
    return merged.astype(np.float32), (top + np.log(total)).astype(np.float32)


def _check_tables(indptr: NDArray[np.integer], indices: NDArray[np.integer], last_page_len: NDArray[np.integer], n: int, pages: int, page_size: int) -> None:
    """FlashInfer checks none of this (issue 51): a `last_page_len` of 0 drops a page, one above P reads past it."""
    if indptr.shape != (n + 1,) or last_page_len.shape != (n,) or indices.ndim != 1:
        raise ValueError(f"indptr, indices, last_page_len shapes={indptr.shape}, {indices.shape}, {last_page_len.shape}, but should be ({n + 1},), (indptr[-1],), ({n},)")
    counts = np.diff(indptr)
    if indptr[0] != 0 or indptr[-1] != indices.size or (counts < 0).any():
        raise ValueError(f"indptr={indptr.tolist()}, but should rise from 0 to len(indices)={indices.size}")
    if ((indices < 0) | (indices >= pages)).any():
        raise ValueError(f"indices={indices.tolist()}, but should be pages of the pool, 0 .. {pages - 1}")
    lo = np.where(counts > 0, 1, 0)
    hi = np.where(counts > 0, page_size, 0)
    if ((last_page_len < lo) | (last_page_len > hi)).any():
        raise ValueError(f"last_page_len={last_page_len.tolist()}, but should be in [1, {page_size}] (0 for a sequence with no page)")


def _pages_read(indptr: NDArray[np.integer], last_page_len: NDArray[np.integer], page_size: int, window: int | None) -> tuple[NDArray[np.intp], ...]:
    """Every page decode reads, sequence by sequence and in order: its sequence, its entry of `indices`, and the
    slots read in it, start .. end - 1. A sequence attends the last `shown` of its kv_len exported positions
    (all, or W - 1 for a window): its first page read is read from the first shown slot, its last page up to
    last_page_len, every other page whole."""
    counts = np.diff(indptr).astype(np.intp)
    kv_len = np.where(counts > 0, (counts - 1) * page_size + last_page_len, 0).astype(np.intp)
    shown = kv_len if window is None else np.minimum(kv_len, window - 1)
    skip = kv_len - shown  # the first positions of the first page(s), not shown
    read = np.where(shown > 0, counts - skip // page_size, 0)  # pages read per sequence
    row = np.repeat(np.arange(indptr.size - 1), read)
    first = np.repeat(indptr[:-1] + skip // page_size, read)
    entry = first + np.arange(read.sum()) - np.repeat(np.cumsum(read) - read, read)
    start = np.where(entry == first, np.repeat(skip % page_size, read), 0)
    end = np.where(entry == np.repeat(indptr[1:] - 1, read), np.repeat(last_page_len, read), page_size)
    return row, entry.astype(np.intp), start.astype(np.intp), end.astype(np.intp)


def decode(
    q: NDArray[np.floating],
    k_pages: NDArray[np.floating],
    v_pages: NDArray[np.floating],
    indptr: NDArray[np.integer],
    indices: NDArray[np.integer],
    last_page_len: NDArray[np.integer],
    *,
    k_new: NDArray[np.floating] | None = None,
    v_new: NDArray[np.floating] | None = None,
    window: int | None = None,
    scale: float | None = None,
) -> F32:
    """One decode step for n sequences: q `[n, Hq, D]` over the pages the tables name in the HND pools
    `[pages, H, P, D]`, then over the new token's own k_new, v_new `[n, H, D]` when given. `window` W: each
    sequence attends to the last min(kv_len, W - 1) exported positions (kv_len = (pages - 1) * P +
    last_page_len), the new token being the W-th. `scale` defaults to 1 / sqrt(D). Returns float32
    `[n, Hq, D]`; a row with no position at all is 0 (as FlashInfer's)."""
    n, hq, d = q.shape
    n_pages, h, page_size, d_kv = k_pages.shape
    if v_pages.shape != k_pages.shape or d_kv != d or hq % h != 0:
        raise ValueError(f"q, k_pages, v_pages shapes={q.shape}, {k_pages.shape}, {v_pages.shape}, but should be [n, Hq, D], [pages, H, P, D] twice, H dividing Hq")
    if (k_new is None) != (v_new is None) or (k_new is not None and (k_new.shape != (n, h, d) or v_new is None or v_new.shape != k_new.shape)):
        raise ValueError(f"k_new, v_new shapes={getattr(k_new, 'shape', None)}, {getattr(v_new, 'shape', None)}, but should both be ({n}, {h}, {d}) or both None")
    if window is not None and window < 1:
        raise ValueError(f"window={window}, but should be at least 1")
    _check_tables(indptr, indices, last_page_len, n, n_pages, page_size)
    scale = 1.0 / float(np.sqrt(d)) if scale is None else scale
    q32 = q.astype(np.float32)

    row, entry, start, end = _pages_read(indptr, last_page_len, page_size, window)
    out = np.zeros((row.size, hq, d), np.float32)
    lse = np.zeros((row.size, hq), np.float32)
    whole = np.flatnonzero((start == 0) & (end == page_size))
    for chunk in np.array_split(whole, max(1, -(-whole.size // PAGES_AT_ONCE))):
        if chunk.size:
            pages = indices[entry[chunk]]
            out[chunk], lse[chunk] = attend(q32[row[chunk]], k_pages[pages], v_pages[pages], scale)
    for j in np.flatnonzero((start != 0) | (end != page_size)):  # at most a first and a last page per sequence
        page, lo, hi = indices[entry[j]], start[j], end[j]
        o_j, lse_j = attend(q32[row[j]][None], k_pages[page, :, lo:hi][None], v_pages[page, :, lo:hi][None], scale)
        out[j], lse[j] = o_j[0], lse_j[0]

    state_out = np.zeros((n, hq, d), np.float32)
    state_lse = np.full((n, hq), -np.inf, np.float32)
    read = np.bincount(row, minlength=n)  # pages read per sequence
    some = read > 0
    if some.any():
        state_out[some], state_lse[some] = _merge_runs(out, lse, read[some])
    if k_new is not None and v_new is not None:
        new_out, new_lse = attend(q32, k_new[:, :, None], v_new[:, :, None], scale)
        state_out, state_lse = merge_state(state_out, state_lse, new_out, new_lse)
    return state_out


def write_slots(k_pages: NDArray[np.floating], v_pages: NDArray[np.floating], slots: NDArray[np.integer], k: NDArray[np.floating], v: NDArray[np.floating]) -> None:
    """Write k, v `[T, H, D]` in place at the flat slots (page * P + offset) of the HND pools `[pages, H, P, D]`,
    rounded to the pool's dtype. A slot of -1 is padding: skipped (Python would read -1 as the last slot)."""
    n_pages, h, page_size, d = k_pages.shape
    if slots.ndim != 1 or k.shape != (slots.size, h, d) or v.shape != k.shape or v_pages.shape != k_pages.shape:
        raise ValueError(f"slots, k, v shapes={slots.shape}, {k.shape}, {v.shape}, but should be (T,), (T, {h}, {d}) twice")
    if ((slots < -1) | (slots >= n_pages * page_size)).any():
        raise ValueError(f"slots={slots.tolist()}, but should be -1 (padding) or in 0 .. {n_pages * page_size - 1}")
    keep = slots >= 0
    page, offset = np.divmod(slots[keep], page_size)
    k_pages[page, :, offset] = k[keep]
    v_pages[page, :, offset] = v[keep]
