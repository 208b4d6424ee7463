"""The data: what gather returns, how written values round to float16, and that no array is shared
between the caller and the cache.

CONTRACT.md "Operations" (append, gather).
"""

from __future__ import annotations

import math
import warnings
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import harness
from assertions import assert_equal, assert_same_bits
from harness import same_bits, snapshot
from oracle import ContiguousKVCache
from programs import APPEND, GEOMETRY, expected_gather, new_cache
from strategies import make_chunk

@pytest.mark.python_surface
def test_changing_a_gathered_array_never_changes_the_cache(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(8, 4, 1, 2, 3)
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(2, 6, 3, 1))
    k, v = cache.gather(0, 0)
    want_k, want_v = k.copy(), v.copy()
    k[...] = 7
    v[...] = -7
    again_k, again_v = cache.gather(0, 0)
    assert same_bits(again_k, want_k) and same_bits(again_v, want_v)
    assert not np.shares_memory(again_k, k) and not np.shares_memory(again_k, again_v)
    assert again_k.flags.writeable, "gather returns new arrays the caller owns"


@pytest.mark.python_surface
def test_changing_a_returned_table_never_changes_the_cache(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(8, 2, 1, 2, 3)
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(2, 5, 3, 2))
    table = cache.block_table(0)
    assert table.dtype == np.int32 and table.ndim == 1
    before = snapshot(cache, [0], 1)
    table[:] = [5, 6, 7]
    assert_equal('snapshot(cache, [0], 1)', snapshot(cache, [0], 1), before, 'snapshot(cache, [0], 1)')
    cache.append(0, 0, *make_chunk(2, 2, 3, 3))  # grows the table: the old array does not follow
    assert_equal('table', table.tolist(), [5, 6, 7], 'table')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2, 3], 'block_table(0)')


@pytest.mark.python_surface
def test_later_writes_never_change_an_earlier_gather(impl: ModuleType) -> None:
    """Appends, copy on write, frees and block reuse after a gather leave the gathered arrays as they were."""
    cache = impl.PagedKVCache(4, 2, 2, 2, 3)
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(2, 3, 3, 4))
    cache.append(0, 1, *make_chunk(2, 1, 3, 5))
    k0, v0 = cache.gather(0, 0)
    k1, v1 = cache.gather(0, 1)
    kept = [a.copy() for a in (k0, v0, k1, v1)]
    cache.fork(0, 1)
    cache.append(1, 0, *make_chunk(2, 1, 3, 6))  # copy on write of block 1
    cache.append(0, 1, *make_chunk(2, 2, 3, 7))
    cache.free(0)
    cache.add_seq(2)
    cache.append(2, 0, *make_chunk(2, 4, 3, 8))  # reuses the freed blocks
    for got, want in zip((k0, v0, k1, v1), kept):
        assert_same_bits('got', got, want, 'got')


@pytest.mark.python_surface
def test_appended_arrays_are_copied_not_kept(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(4, 2, 1, 2, 3)
    cache.add_seq(0)
    k, v = make_chunk(2, 3, 3, 9)
    k16, v16 = k.astype(np.float16), v.astype(np.float16)
    cache.append(0, 0, k16, v16)
    want = [a.copy() for a in (k16, v16)]
    k16[...] = 0
    v16[...] = 0
    got = cache.gather(0, 0)
    assert same_bits(got[0], want[0]) and same_bits(got[1], want[1])


def test_a_layer_with_no_positions_gathers_empty(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(4, 2, 3, 2, 5)
    cache.add_seq(0)
    for layer in range(3):
        k, v = cache.gather(0, layer)
        assert k.shape == v.shape == (2, 0, 5) and k.dtype == v.dtype == np.float16
    cache.append(0, 1, *make_chunk(2, 3, 5, 1))
    cache.fork(0, 1)
    for s in (0, 1):
        assert_equal('gather(s, 0)[0].shape', cache.gather(s, 0)[0].shape, (2, 0, 5), 'gather(s, 0)[0].shape')
        assert_equal('gather(s, 2)[1].shape', cache.gather(s, 2)[1].shape, (2, 0, 5), 'gather(s, 2)[1].shape')
        assert_equal('gather(s, 1)[0].shape', cache.gather(s, 1)[0].shape, (2, 3, 5), 'gather(s, 1)[0].shape')


ROUNDING = np.array(
    [
        1 + 2**-11,  # a tie: rounds to even (1.0)
        1 + 3 * 2**-11,  # a tie: rounds up to 1 + 2**-9
        1 + 2**-12,
        0.1,
        -1 / 3,
        65504.0,  # float16's largest
        65519.0,  # rounds down to 65504
        65520.0,  # rounds to inf
        1e6,
        -1e6,
        2.0**-24,  # the smallest subnormal
        2.0**-26,  # underflows to 0
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
    ],
    dtype=np.float64,
)


@pytest.mark.parametrize(
    "dtype",
    [np.float16] + [pytest.param(d, marks=pytest.mark.python_surface) for d in (np.float64, np.float32, np.int64, np.int32, np.uint8, np.int8)],
)
def test_values_round_as_the_contiguous_float16_cache_stores_them(impl: ModuleType, dtype: Any) -> None:
    """Any real dtype is rounded to float16 on write, as the contiguous float16 cache rounds it."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        values = np.array([0, 1, -1, 2049, 2051, 65504, 65520, 70000, info.min, info.max], dtype=np.float64)
        values = values[(values >= info.min) & (values <= info.max)]
    else:
        values = ROUNDING
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns on overflow to inf in casts
        k = np.resize(values, (1, 12, 2)).astype(dtype)
        v = -k if not np.issubdtype(dtype, np.unsignedinteger) else k[::-1].copy()
        paged = impl.PagedKVCache(8, 4, 1, 1, 2)
        contiguous = ContiguousKVCache(16, 1, 1, 2)
        for cache in (paged, contiguous):
            cache.add_seq(0)
            cache.append(0, 0, k[:, :5], v[:, :5])
            cache.append(0, 0, k[:, 5:], v[:, 5:])
        expected_k = k.astype(np.float16)
    got, want = paged.gather(0, 0), contiguous.gather(0, 0)
    assert same_bits(got[0], want[0]) and same_bits(got[1], want[1])
    assert_same_bits('got[0]', got[0], expected_k, 'got[0]')


@given(geometry=GEOMETRY, appends=st.lists(APPEND, max_size=20))
def test_gather_is_the_concatenation_of_the_appends_in_float16(
    geometry: tuple[int, int, int, int], appends: list[tuple[int, int, int, int, str, bool]]
) -> None:
    bs, n_layers, heads, dims = geometry
    totals = [[0] * n_layers for _ in range(3)]
    for s, layer, tokens, *_ in appends:
        totals[s][layer % n_layers] += tokens
    needed = sum(math.ceil(max(t) / bs) for t in totals)
    num_blocks = max(1, needed)  # exactly enough
    cache = new_cache(num_blocks, geometry)
    appended: dict[tuple[int, int], list[np.ndarray]] = {(s, li): [] for s in range(3) for li in range(n_layers)}
    appended_v: dict[tuple[int, int], list[np.ndarray]] = {key: [] for key in appended}
    for s in range(3):
        cache.add_seq(s)
    for s, layer, tokens, seed, dtype, tricky in appends:
        li = layer % n_layers
        k, v = make_chunk(heads, tokens, dims, seed, dtype, tricky)
        cache.append(s, li, k, v)
        appended[s, li].append(k)
        appended_v[s, li].append(v)
    for (s, li), chunks in appended.items():
        k, v = cache.gather(s, li)
        assert harness.same_bits(k, expected_gather(chunks, heads, dims)), f"K of sequence {s} layer {li}"
        assert harness.same_bits(v, expected_gather(appended_v[s, li], heads, dims)), f"V of sequence {s} layer {li}"
        assert cache.seq_len(s, li) == sum(c.shape[1] for c in chunks)
    # no table holds a block more than ceil(longest layer / B)
    assert cache.num_free_blocks() == num_blocks - needed
    assert [len(cache.block_table(s)) for s in range(3)] == [math.ceil(max(t) / bs) for t in totals]
    cache.close()
