"""Page tables for attention kernels (CONTRACT.md, "Page tables for kernels"): pure array arithmetic.

What a FlashInfer-style kernel reads is built from the block tables, not the tables themselves: for a
batch of sequences, `indptr`, `indices` and `last_page_len` over a pool of pages of P slots, P dividing
the block size B (a block b is kernel pages b*r .. b*r + r - 1, r = B // P); and for a write, flat slots
`block * B + slot`. These functions take a sequence's table, its layer's length n and the first position
`a` gather shows, and nothing of the cache, so a port can read them as the whole rule. No loop runs per
position: one per sequence, the rest NumPy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import NDArray

RELEASED = -1  # a table entry a sliding window let go: never a page, a slot of -1


def kernel_pages(table: Sequence[int], shown_from: int, length: int, block_size: int, page_size: int) -> NDArray[np.int64]:
    """The kernel pages holding positions shown_from .. length-1, in order: logical page q (positions
    q*P .. q*P + P - 1) is page table[q // r] * r + q % r. Empty when no position is shown."""
    if shown_from >= length:
        return np.zeros(0, dtype=np.int64)
    r = block_size // page_size
    q = np.arange(shown_from // page_size, (length - 1) // page_size + 1, dtype=np.int64)
    blocks = np.asarray(table, dtype=np.int64)[q // r]
    return blocks * r + q % r


def page_table(
    tables: Sequence[Sequence[int]], shown_from: Sequence[int], lengths: Sequence[int], block_size: int, page_size: int
) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]]:
    """(indptr, indices, last_page_len), new int32 arrays, for sequences given by their tables, first shown
    positions and lengths: indptr the running count of pages, last_page_len the positions of the last page,
    from its first slot to length - 1 (in 1 .. P; 0 for a sequence with no page)."""
    pages = [kernel_pages(t, a, n, block_size, page_size) for t, a, n in zip(tables, shown_from, lengths)]
    counts = np.array([len(p) for p in pages], dtype=np.int64)
    indptr = np.zeros(len(pages) + 1, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    indices = np.concatenate(pages).astype(np.int32) if pages else np.zeros(0, dtype=np.int32)
    n = np.asarray(lengths, dtype=np.int64)
    last = np.where(counts > 0, n - (n - 1) // page_size * page_size, 0).astype(np.int32)
    return indptr, indices, last


def slot_mapping(table: Sequence[int], start: int, count: int, block_size: int) -> NDArray[np.int64]:
    """The flat slots of positions start .. start+count-1: table[p // B] * B + p % B, which is kernel page *
    P + offset for every P dividing B; -1 where the entry is RELEASED (a padding slot: never written)."""
    p = np.arange(start, start + count, dtype=np.int64)
    blocks = np.asarray(table, dtype=np.int64)[p // block_size] if count else np.zeros(0, dtype=np.int64)
    return np.where(blocks == RELEASED, RELEASED, blocks * block_size + p % block_size)


def pool_pages(pool: NDArray[np.float16], page_size: int) -> NDArray[np.float16]:
    """A layer's pool `[H, N, B, D]` as kernel pages in HND, `[N * r, H, P, D]`: a view, no copy (page g is
    slots (g % r) * P .. (g % r) * P + P - 1 of block g // r)."""
    heads, blocks, block_size, d_head = pool.shape
    split = pool.reshape(heads, blocks * (block_size // page_size), page_size, d_head)
    return split.transpose(1, 0, 2, 3)
