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

from tests.assertions import assert_equal, assert_same_bits
from tests.harness import assert_matches_model
from oracle import ContiguousKVCache
from tests.programs import APPEND, GEOMETRY, both, expected_gather, new_cache, run
from tests.strategies import make_chunk


@pytest.mark.python_surface
def test_changing_a_gathered_array_never_changes_the_cache(impl: ModuleType) -> None:
    cache, model = both(impl, 8, 4, 1, 2, 3)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(2, 6, 3, 1))
    k, v = cache.gather(0, 0)
    k[...] = 7
    v[...] = -7
    again_k, again_v = cache.gather(0, 0)
    want_k, want_v = model.gather(0, 0)
    assert_same_bits("gather(0, 0) k after changing the array it returned", again_k, want_k, "gather(0, 0)")
    assert_same_bits("gather(0, 0) v after changing the array it returned", again_v, want_v, "gather(0, 0)")
    shared = [pair for pair, a, b in (("k, the earlier k", again_k, k), ("k, v", again_k, again_v)) if np.shares_memory(a, b)]
    assert_equal("arrays of gather(0, 0) that share memory", shared, [], "gather(0, 0)")
    assert_equal("gather(0, 0) k is writeable", again_k.flags.writeable, True, "gather returns new arrays the caller owns")


@pytest.mark.python_surface
def test_changing_a_returned_table_never_changes_the_cache(impl: ModuleType) -> None:
    cache, model = both(impl, 8, 2, 1, 2, 3)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(2, 5, 3, 2))
    table = cache.block_table(0)
    assert_equal("(block_table(0).dtype, .ndim)", (str(table.dtype), table.ndim), ("int32", 1), "block_table(0)")
    table[:] = [5, 6, 7]
    assert_matches_model(cache, model, when=", after changing the array block_table(0) returned")
    run((cache, model), "append", 0, 0, *make_chunk(2, 2, 3, 3))  # grows the table: the old array does not follow
    assert_equal('the array block_table(0) returned earlier', table.tolist(), [5, 6, 7], 'after append(0, 0) grew the table')
    assert_matches_model(cache, model)


@pytest.mark.python_surface
def test_later_writes_never_change_an_earlier_gather(impl: ModuleType) -> None:
    """Appends, copy on write, frees and block reuse after a gather leave the gathered arrays as they were."""
    cache, model = both(impl, 4, 2, 2, 2, 3)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(2, 3, 3, 4))
    run((cache, model), "append", 0, 1, *make_chunk(2, 1, 3, 5))
    gathered = {layer: cache.gather(0, layer) for layer in (0, 1)}
    wanted = {layer: model.gather(0, layer) for layer in (0, 1)}
    run((cache, model), "fork", 0, 1)
    run((cache, model), "append", 1, 0, *make_chunk(2, 1, 3, 6))  # copy on write of block 1
    run((cache, model), "append", 0, 1, *make_chunk(2, 2, 3, 7))
    run((cache, model), "free", 0)
    run((cache, model), "add_seq", 2)
    run((cache, model), "append", 2, 0, *make_chunk(2, 4, 3, 8))  # reuses the freed blocks
    for layer in (0, 1):
        for name, got, want in zip("kv", gathered[layer], wanted[layer]):
            assert_same_bits(f"gather(0, {layer}) {name}, made before the writes", got, want, "after fork, appends, free and reuse")
    assert_matches_model(cache, model)


@pytest.mark.python_surface
def test_appended_arrays_are_copied_not_kept(impl: ModuleType) -> None:
    cache, model = both(impl, 4, 2, 1, 2, 3)
    run((cache, model), "add_seq", 0)
    k, v = make_chunk(2, 3, 3, 9)
    k16, v16 = k.astype(np.float16), v.astype(np.float16)
    run((cache, model), "append", 0, 0, k16, v16)
    k16[...] = 0
    v16[...] = 0
    assert_matches_model(cache, model, when=", after changing the arrays append(0, 0) was given")


def test_a_layer_with_no_positions_gathers_empty(impl: ModuleType) -> None:
    cache, model = both(impl, 4, 2, 3, 2, 5)
    run((cache, model), "add_seq", 0)
    for layer in range(3):
        for name, got, want in zip("kv", cache.gather(0, layer), model.gather(0, layer)):
            assert_same_bits(f"gather(0, {layer}) {name}", got, want, f"gather(0, {layer}) of a layer with no positions")
    run((cache, model), "append", 0, 1, *make_chunk(2, 3, 5, 1))
    run((cache, model), "fork", 0, 1)
    assert_matches_model(cache, model)


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
        paged, model = both(impl, 8, 4, 1, 1, 2)
        contiguous = ContiguousKVCache(16, 1, 1, 2)
        run((paged, model), "add_seq", 0)
        contiguous.add_seq(0)
        for chunk in (slice(0, 5), slice(5, None)):
            run((paged, model), "append", 0, 0, k[:, chunk], v[:, chunk])
            contiguous.append(0, 0, k[:, chunk], v[:, chunk])
        expected_k = k.astype(np.float16)
    for name, got, want in zip("kv", paged.gather(0, 0), contiguous.gather(0, 0)):
        assert_same_bits(f"gather(0, 0) {name}", got, want, f"{np.dtype(dtype).name} values, against the contiguous float16 cache")
    assert_same_bits("gather(0, 0) k", paged.gather(0, 0)[0], expected_k, f"{np.dtype(dtype).name} values, against k.astype(float16)")
    assert_matches_model(paged, model)


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
    cache, model = new_cache(num_blocks, geometry)
    appended: dict[tuple[int, int], list[np.ndarray]] = {(s, li): [] for s in range(3) for li in range(n_layers)}
    appended_v: dict[tuple[int, int], list[np.ndarray]] = {key: [] for key in appended}
    for s in range(3):
        run((cache, model), "add_seq", s)
    for s, layer, tokens, seed, dtype, tricky in appends:
        li = layer % n_layers
        k, v = make_chunk(heads, tokens, dims, seed, dtype, tricky)
        run((cache, model), "append", s, li, k, v)
        appended[s, li].append(k)
        appended_v[s, li].append(v)
    for (s, li), chunks in appended.items():
        k, v = cache.gather(s, li)
        assert_same_bits(f"gather({s}, {li}) k", k, expected_gather(chunks, heads, dims), "against the appends, joined in float16")
        assert_same_bits(f"gather({s}, {li}) v", v, expected_gather(appended_v[s, li], heads, dims), "against the appends, joined in float16")
    assert_matches_model(cache, model)  # lengths, and no table holds a block more than ceil(longest layer / B)
    cache.close()
