"""The model's page tables for kernels (CONTRACT.md, "Page tables for kernels"), position by position.

Obviously right because it walks the positions: a sequence's pages are, in order, the kernel page of
each position `gather` shows (manager block b's slot s is kernel page b * (B / P) + s // P), taken once
per logical page; its last page holds the positions from that page's first slot to the last one shown.
A slot is the block's id times B plus the slot, -1 where the entry is RELEASED. The pool of pages is
built from the token lists: every position a live table holds, written where that table puts it.
`ModelKVCache`'s methods of the same names call these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .model import RELEASED, _integer

if TYPE_CHECKING:
    from .model import ModelKVCache


def page_size_of(model: ModelKVCache, page_size: Any) -> int:
    """P: None for B, else an integer (TypeError) from 1 that divides B (ValueError)."""
    if page_size is None:
        return model.block_size
    size = _integer(page_size, "page_size")
    if size < 1 or model.block_size % size:
        raise ValueError(f"page_size {size} must be at least 1 and divide block_size {model.block_size}")
    return size


def kernel_page(model: ModelKVCache, sid: int, layer: int, position: int, page_size: int) -> int:
    """The kernel page that holds a position: its block's id times B / P, plus its slot // P."""
    block = model.table(sid, layer)[position // model.block_size]
    return block * (model.block_size // page_size) + position % model.block_size // page_size


def page_table(model: ModelKVCache, seq_ids: Any, layer: Any, page_size: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, last_page_len), int32, for the batch `seq_ids` and `layer`."""
    model._open()
    try:
        items = list(seq_ids)
    except TypeError:
        raise TypeError(f"seq_ids must be an iterable of integers, got {seq_ids!r}") from None
    ids = [_integer(s, "seq_id") for s in items]
    for i, sid in enumerate(ids):
        model._live(sid)
        if sid in ids[:i]:
            raise ValueError(f"sequence {sid} is twice in the batch")
    li = model._layer(layer)
    size = page_size_of(model, page_size)
    indptr, indices, last = [0], [], []
    for sid in ids:
        n = model.length(sid, li)
        shown = range(n - len(model.window_of(sid, li)), n)  # the positions gather shows
        for p in shown:
            if p == shown.start or p % size == 0:  # the first shown, or the first of a page
                indices.append(kernel_page(model, sid, li, p, size))
        indptr.append(len(indices))
        last.append(shown[-1] % size + 1 if shown else 0)
    return tuple(np.array(x, dtype=np.int32) for x in (indptr, indices, last))  # type: ignore[return-value]


def slot_mapping(model: ModelKVCache, seq_id: Any, layer: Any, start: Any, count: Any) -> np.ndarray:
    """int64 slots of the layer's positions start .. start+count-1: block * B + slot, -1 for a RELEASED entry."""
    sid = model._live(seq_id)
    li = model._layer(layer)
    first = _integer(start, "start")
    if first < 0:
        raise ValueError(f"start {first} is negative")
    n = _integer(count, "count")
    if n < 0:
        raise ValueError(f"count {n} is negative")
    if first + n > model.length(sid, li):
        raise ValueError(f"positions up to {first + n - 1} are past the layer's {model.length(sid, li)}")
    bs, table = model.block_size, model.table(sid, li)
    slots = [RELEASED if table[p // bs] == RELEASED else table[p // bs] * bs + p % bs for p in range(first, first + n)]
    return np.array(slots, dtype=np.int64)


def kv_pages(model: ModelKVCache, layer: Any, page_size: Any) -> tuple[np.ndarray, np.ndarray]:
    """The layer's K and V as kernel pages `[N * B / P, H, P, D]` float16: each position a live table holds, at
    its kernel page and slot; every other slot 0."""
    model._open()
    li = model._layer(layer)
    size = page_size_of(model, page_size)
    shape = (model.num_blocks * (model.block_size // size), model.n_kv_heads, size, model.d_head)
    k, v = np.zeros(shape, dtype=np.float16), np.zeros(shape, dtype=np.float16)
    for sid in model.live():
        table = model.table(sid, li)
        for p, pos in enumerate(model.tokens[sid][li]):
            if pos is not None and table[p // model.block_size] != RELEASED:
                page = kernel_page(model, sid, li, p, size)
                k[page, :, p % size], v[page, :, p % size] = pos.k, pos.v
    return k, v
