"""Page tables for attention kernels (CONTRACT.md, "Page tables for kernels"): pure array arithmetic.

What a FlashInfer-style kernel reads is built from the block tables, not the tables themselves: for a
batch of sequences, `indptr`, `indices` and `last_page_len` over a pool of pages of P slots, P dividing
the block size B (a block b is kernel pages b*r .. b*r + r - 1, r = B // P); and for a write, flat slots
`block * B + slot`. These functions take a sequence's table, its layer's length n and the first position
`a` gather shows, and nothing of the cache, so a port can read them as the whole rule. No loop runs per
position or sequence: the batch's tables are laid end to end and read at once.
"""

from __future__ import annotations

from itertools import chain
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from .groups import RELEASED  # a table entry a sliding window let go: never a page, a slot of -1


def page_table(
    tables: Sequence[Sequence[int]], shown_from: Sequence[int], lengths: Sequence[int], block_size: int, page_size: int
) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]]:
    """(indptr, indices, last_page_len), new int32 arrays, for sequences given by their tables, first shown
    positions and lengths. Sequence i's pages are its logical pages q = shown_from // P .. (length - 1) // P (none
    when no position is shown); page q is kernel page table[q // r] * r + q % r. indptr is the running count of
    pages, last_page_len the positions of the last page, from its first slot to length - 1 (in 1 .. P; 0 for a
    sequence with no page). Every sequence at once: its tables laid end to end, each page's entry looked up there."""
    r = block_size // page_size
    n = np.asarray(lengths, dtype=np.int64)
    first = np.asarray(shown_from, dtype=np.int64) // page_size  # each sequence's first page
    sizes = np.fromiter(map(len, tables), np.int64)  # each table's entries
    counts = (n + page_size - 1) // page_size - first  # pages first .. ceil(n / P) - 1 (none at n = 0, where a = 0)
    indptr = np.zeros(len(n) + 1, dtype=np.int32)
    np.cumsum(counts, out=indptr[1:])
    flat = np.fromiter(chain.from_iterable(tables), np.int64)
    seq = np.repeat(np.arange(len(n)), counts)  # the sequence of each exported page
    q = first[seq] + np.arange(int(indptr[-1])) - indptr[:-1][seq]  # its logical page
    table_start = np.cumsum(sizes) - sizes  # where each table starts in `flat`
    indices = (flat[table_start[seq] + q // r] * r + q % r).astype(np.int32)
    last = np.where(counts > 0, n - (n - 1) // page_size * page_size, 0).astype(np.int32)
    return indptr, indices, last


def slot_mapping(table: Sequence[int], start: int, count: int, block_size: int) -> NDArray[np.int64]:
    """The flat slots of positions start .. start+count-1: table[p // B] * B + p % B, which is kernel page *
    P + offset for every P dividing B; -1 where the entry is RELEASED (a padding slot: never written)."""
    p = np.arange(start, start + count)
    blocks = np.asarray(table, dtype=np.int64)[p // block_size]
    return np.where(blocks == RELEASED, RELEASED, blocks * block_size + p % block_size)


def pool_pages(pool: NDArray[np.float16], page_size: int) -> NDArray[np.float16]:
    """A layer's pool `[H, N, B, D]` as kernel pages in HND, `[N * r, H, P, D]`: a view, no copy (page g is
    slots (g % r) * P .. (g % r) * P + P - 1 of block g // r)."""
    heads, blocks, block_size, d_head = pool.shape
    split = pool.reshape(heads, blocks * (block_size // page_size), page_size, d_head)
    return split.transpose(1, 0, 2, 3)
