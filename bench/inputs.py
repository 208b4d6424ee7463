"""The inputs every row shares: K and V chunks, caches whose pools are written once, and the NumPy floor's pools and calls."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from oracle import ContiguousKVCache

from .sizes import B, D, H, L


def kv_input(rng: np.random.Generator, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Float16 K and V `[L, H, tokens, D]`: every layer's chunk for `tokens` positions.

    Random bit patterns of finite float16 values in [0, 1): copies do not look at the values,
    and drawing bits is much faster than drawing normals.
    """
    shape = (L, H, tokens, D)
    return (rng.integers(0, 0x3C00, shape, dtype=np.uint16).view(np.float16),
            rng.integers(0, 0x3C00, shape, dtype=np.uint16).view(np.float16))


def paged_cache(impl: Any, num_blocks: int) -> Any:
    """A paged cache whose whole pool has been written once (through the public API), then freed."""
    cache = impl.PagedKVCache(num_blocks, B, L, H, D)
    chunk = np.zeros((H, 64 * B, D), dtype=np.float16)
    chunk.fill(0)
    cache.add_seq(-1)
    for layer in range(L):
        left = num_blocks * B
        while left:
            take = min(left, chunk.shape[1])
            cache.append(-1, layer, chunk[:, :take], chunk[:, :take])
            left -= take
    cache.free(-1)
    assert cache.stats()["free"] == num_blocks
    return cache


def fill(cache: Any, seq: int, k: np.ndarray, v: np.ndarray, tokens: int | None = None) -> None:
    """Append the first `tokens` positions of k, v `[L, H, T, D]` to every layer of a sequence."""
    n = k.shape[2] if tokens is None else tokens
    for layer in range(L):
        cache.append(seq, layer, k[layer, :, :n], v[layer, :, :n])


def contiguous_seq(cache: ContiguousKVCache, seq: int) -> None:
    """Add a contiguous sequence and write every page of it once, so no timed write faults it in."""
    cache.add_seq(seq)
    cache.k[seq].fill(0)
    cache.v[seq].fill(0)


def decode_step(cache: Any, seq: int, k1: list[np.ndarray], v1: list[np.ndarray]) -> None:
    """One decode step: one token appended to every layer."""
    for layer in range(L):
        cache.append(seq, layer, k1[layer], v1[layer])


def one_token(rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    k, v = kv_input(rng, 1)
    return list(k), list(v)


# -- the NumPy floor ----------------------------------------------------------------------------
#
# What a copy costs in NumPy alone: the same calls the paged cache's copy needs, with nothing around
# them, on pools of the floor's own laid out as the paged cache's ([L, H, N, B, D] float16, written
# once), with the block ids the paged cache's table holds. Its ratio is the cost of everything but
# those calls (argument checks, the table's lookups, the segments); NumPy sets the rest. Whole blocks
# with consecutive ids are one slice of each pool; other whole blocks are one `take` per pool
# (gather of whole blocks only) or per head (a part-full last block follows, so only each head's rows
# of the output are contiguous), or one index assignment per head (a write).


def floor_pools(num_blocks: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The floor's K and V pools of `num_blocks` blocks, written once, as one (K, V) view pair per layer."""
    shape = (L, H, num_blocks, B, D)
    k, v = np.empty(shape, dtype=np.float16), np.empty(shape, dtype=np.float16)
    k.fill(1)
    v.fill(1)
    return list(zip(k, v))


def run_of(ids: np.ndarray) -> slice | None:
    """The ids as a slice of the pools when they are consecutive, else None."""
    if len(ids) and (np.diff(ids) == 1).all():
        return slice(int(ids[0]), int(ids[0]) + len(ids))
    return None


def floor_gather(pools: list[tuple[np.ndarray, np.ndarray]], ids: np.ndarray, length: int) -> Callable[[int], object]:
    """A gather's NumPy calls for `length` positions in the blocks `ids` (in table order), one layer a call."""
    n, tail = divmod(length, B)
    whole = np.asarray(ids[:n], dtype=np.intp)
    run = run_of(whole)
    last = int(ids[n]) if tail else -1

    def gather(layer: int) -> object:
        k_pool, v_pool = pools[layer]
        k_out = np.empty((H, length, D), dtype=np.float16)
        v_out = np.empty((H, length, D), dtype=np.float16)
        for pool, out in ((k_pool, k_out), (v_pool, v_out)):
            if run is not None:
                out[:, : n * B] = pool[:, run].reshape(H, n * B, D)
            elif n and not tail:
                pool.take(whole, 1, out.reshape(H, n, B, D), "clip")
            elif n:
                for h in range(H):
                    pool[h].take(whole, 0, out[h, : n * B].reshape(n, B, D), "clip")
            if tail:
                out[:, n * B :] = pool[:, last, :tail]
        return k_out, v_out

    return gather


def floor_prefill(pools: list[tuple[np.ndarray, np.ndarray]], ids: np.ndarray, k: np.ndarray, v: np.ndarray) -> Callable[[], None]:
    """A prefill's NumPy calls: k, v `[L, H, T, D]` (T a multiple of B) written to the blocks `ids`, every layer."""
    n = len(ids)
    assert k.shape[2] == n * B, "the floor writes whole blocks"
    blocks = np.asarray(ids, dtype=np.intp)
    run = run_of(blocks)

    def prefill() -> None:
        for layer, (k_pool, v_pool) in enumerate(pools):
            for pool, src in ((k_pool, k[layer]), (v_pool, v[layer])):
                heads = src.reshape(H, n, B, D)
                if run is not None:
                    pool[:, run] = heads
                else:
                    for h in range(H):
                        pool[h][blocks] = heads[h]

    return prefill


def floor_decode(pools: list[tuple[np.ndarray, np.ndarray]], block: int, k1: list[np.ndarray], v1: list[np.ndarray]) -> Callable[[], None]:
    """A decode step's NumPy calls: one token written to a slot of `block`, every layer (the slot turns)."""
    slots = iter(range(10**9))

    def step() -> None:
        slot = next(slots) % B
        for layer, (k_pool, v_pool) in enumerate(pools):
            k_pool[:, block, slot : slot + 1] = k1[layer]
            v_pool[:, block, slot : slot + 1] = v1[layer]

    return step


def table_ids(cache: Any, seq: int) -> np.ndarray:
    """A sequence's block table, through the public API."""
    return np.asarray(cache.block_table(seq), dtype=np.intp)


FLOOR = "NumPy floor"
