"""Contract points beyond the catalog: aliasing, close(), allocation order, empty layers, float16 rounding."""

from __future__ import annotations

import warnings
from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest

from assertions import assert_equal, assert_same_bits
import harness
from harness import assert_matches_model, same_bits, snapshot
from oracle import ContiguousKVCache, ModelKVCache
from strategies import make_chunk


def both(impl: ModuleType, *sizes: int) -> tuple[Any, ModelKVCache]:
    return impl.PagedKVCache(*sizes), harness.model(*sizes)


def run(caches: tuple[Any, ...], call: str, *args: Any) -> None:
    for c in caches:
        getattr(c, call)(*args)


# -- aliasing ---------------------------------------------------------------------------------


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


# -- close() ------------------------------------------------------------------------------------

AFTER_CLOSE: list[Any] = [
    ("add_seq", lambda c: c.add_seq(5)),
    ("fork", lambda c: c.fork(0, 5)),
    ("append", lambda c: c.append(0, 0, np.zeros((2, 1, 3)), np.zeros((2, 1, 3)))),
    ("gather", lambda c: c.gather(0, 0)),
    ("seq_len", lambda c: c.seq_len(0)),
    ("block_table", lambda c: c.block_table(0)),
    ("free", lambda c: c.free(0)),
    ("stats", lambda c: c.stats()),
    ("num_free_blocks", lambda c: c.num_free_blocks()),
    pytest.param("with", lambda c: c.__enter__(), marks=pytest.mark.python_surface),
]


@pytest.mark.parametrize("name, call", AFTER_CLOSE, ids=[getattr(c, "values", c)[0] for c in AFTER_CLOSE])
def test_every_call_after_close_raises_value_error(impl: ModuleType, name: str, call: Callable[[Any], object]) -> None:
    cache = impl.PagedKVCache(4, 2, 1, 2, 3)
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(2, 1, 3, 0))
    cache.close()
    with pytest.raises(ValueError):
        call(cache)
    cache.close()  # a second close does nothing
    with pytest.raises(ValueError):
        call(cache)


@pytest.mark.python_surface
def test_with_closes_on_exit_even_on_error(impl: ModuleType) -> None:
    with impl.PagedKVCache(4, 2, 1, 2, 3) as cache:
        cache.add_seq(0)
        assert_equal('stats()["free"]', cache.stats()["free"], 4, 'stats()["free"]')
    with pytest.raises(ValueError):
        cache.stats()
    with pytest.raises(ZeroDivisionError):
        with impl.PagedKVCache(4, 2, 1, 2, 3) as other:
            1 / 0
    with pytest.raises(ValueError):
        other.add_seq(1)
    other.close()


# -- allocation order ---------------------------------------------------------------------------


def test_allocation_takes_the_lowest_free_block_after_frees_and_copies(impl: ModuleType) -> None:
    """Every block taken is the lowest-numbered free one at that moment, in position order."""
    cache, model = both(impl, 12, 2, 2, 2, 3)
    for s in (0, 1, 2):
        run((cache, model), "add_seq", s)
        run((cache, model), "append", s, 0, *make_chunk(2, 3, 3, s))  # 0: [0, 1], 1: [2, 3], 2: [4, 5]
    assert_equal('[block_table(s) for s in (0, 1, 2)]', [cache.block_table(s).tolist() for s in (0, 1, 2)], [[0, 1], [2, 3], [4, 5]], '[block_table(s) for s in (0, 1, 2)]')
    run((cache, model), "free", 1)  # 2 and 3 free again; 6.. never used
    run((cache, model), "fork", 0, 3)
    run((cache, model), "append", 3, 0, *make_chunk(2, 4, 3, 9))  # copy of block 1, then two new blocks
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6], 'block_table(3)')
    run((cache, model), "free", 0)  # block 1 returns; block 0 is still seq 3's
    run((cache, model), "append", 3, 1, *make_chunk(2, 7, 3, 10))  # layer 1 writes blocks 0, 2, 3, 6 (no sharing) then index 4 → 1
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6], 'block_table(3)')
    run((cache, model), "append", 3, 1, *make_chunk(2, 2, 3, 11))
    assert_equal('block_table(3)', cache.block_table(3).tolist(), [0, 2, 3, 6, 1], 'block_table(3)')
    assert_matches_model(cache, model)


def test_copy_on_write_across_layers(impl: ModuleType) -> None:
    """A layer that catches up inside shared blocks copies each of them, in position order."""
    cache, model = both(impl, 12, 2, 2, 1, 2)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(1, 6, 2, 1))  # blocks 0, 1, 2 for layer 0
    run((cache, model), "fork", 0, 1)
    run((cache, model), "append", 1, 1, *make_chunk(1, 5, 2, 2))  # layer 1 touches blocks 0, 1, 2: all shared
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [3, 4, 5], 'block_table(1)')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_matches_model(cache, model)
    k_parent, _ = cache.gather(0, 0)
    k_child, _ = cache.gather(1, 0)
    assert_same_bits('k_parent', k_parent, k_child, "the copies carry every layer, layer 0 included")


# -- shapes and values --------------------------------------------------------------------------


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


@pytest.mark.python_surface
def test_numpy_integer_ids_and_layers_are_integers(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(np.int64(4), np.int32(2), np.int16(2), np.uint8(2), np.int64(3))
    cache.add_seq(np.int64(7))
    cache.append(np.int32(7), np.int64(1), *make_chunk(2, 3, 3, 1))
    cache.fork(np.int64(7), np.uint16(8))
    assert_equal('seq_len(8, np.int8(1))', cache.seq_len(8, np.int8(1)), 3, 'seq_len(8, np.int8(1))')
    assert_equal('block_table(np.int64(8))', cache.block_table(np.int64(8)).tolist(), [0, 1], 'block_table(np.int64(8))')
    cache.free(np.int64(7))
    assert_equal('stats()', cache.stats(), {"free": 2, "used": 2, "cached": 0, "evictions": 0}, 'stats()')


def test_stats_are_plain_ints_that_add_up(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(5, 2, 1, 2, 3)
    cache.add_seq(0)
    cache.append(0, 0, *make_chunk(2, 3, 3, 1))
    stats = cache.stats()
    assert_equal('set(stats)', set(stats), {"free", "used", "cached", "evictions"}, 'set(stats)')
    assert all(type(value) is int for value in stats.values()), stats
    assert_equal('stats', stats, {"free": 3, "used": 2, "cached": 0, "evictions": 0}, 'stats')
    assert type(cache.num_free_blocks()) is int and cache.num_free_blocks() == 3
    assert type(cache.seq_len(0)) is int


def test_a_pool_of_one_block(impl: ModuleType) -> None:
    cache, model = both(impl, 1, 3, 1, 1, 1)
    one = np.ones((1, 1, 1))
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    before = snapshot(cache, [0], 1)
    with pytest.raises(impl.OutOfBlocks):  # positions 2 and 3: a second block
        cache.append(0, 0, np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    assert_equal('snapshot(cache, [0], 1)', snapshot(cache, [0], 1), before, 'snapshot(cache, [0], 1)')
    run((cache, model), "fork", 0, 1)
    for writer in (1, 0):
        with pytest.raises(impl.OutOfBlocks):  # the shared block would need a copy
            cache.append(writer, 0, one, one)
    assert_equal('snapshot(cache, [0], 1)', snapshot(cache, [0], 1), before, 'snapshot(cache, [0], 1)')
    run((cache, model), "free", 0)
    run((cache, model), "append", 1, 0, one * 5, one * 6)  # the child alone holds block 0: written in place
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0], 'block_table(1)')
    assert_matches_model(cache, model)
    run((cache, model), "free", 1)
    assert_equal('stats()["free"]', cache.stats()["free"], 1, 'stats()["free"]')


# -- which error wins, and a pool too large to allocate ------------------------------------------

_ok = np.zeros((2, 1, 3), dtype=np.float32)
_complex = _ok.astype(np.complex64)
# CONTRACT.md "Which error wins", where a TypeError meets another error: rows a driver cannot be sent
# (the vectors error-precedence and prefix-precedence check the rest). Each argument is checked
# wholly, type then value, before the next; the id before the layer, k before v, types of every
# token before their values.
PRECEDENCE: list[Any] = [
    ("bool layer on an unknown id", lambda c: c.append(99, True, _ok, _ok)),
    ("complex k on a freed id", lambda c: c.append(3, 0, _complex, _complex)),
    ("complex k on a bad layer", lambda c: c.append(0, 2, _complex, _complex)),
    ("str layer with a 2-D k", lambda c: c.append(0, "0", _ok[0], _ok)),
    ("2-D k before a complex v", lambda c: c.append(0, 0, _ok[0], _complex)),
    ("complex k before a 2-D v", lambda c: c.append(0, 0, _complex, _ok[0])),
    ("float layer on a freed id", lambda c: c.gather(3, 0.0)),
    ("bool child of an unknown parent", lambda c: c.fork(99, True)),
    ("float parent onto a live child", lambda c: c.fork(1.0, 1)),
    ("bool token on a live id", lambda c: c.add_seq(0, [True])),
    ("a negative token before a bool one", lambda c: c.add_seq(9, [-1, True])),
    ("bool token on an unknown id", lambda c: c.extend(99, [True])),
    ("tokens that are no list, on an unknown id", lambda c: c.extend(99, 5)),
]


def _error_of(call: Callable[[], object]) -> type[BaseException]:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the error's type is the answer
        return type(exc)
    raise AssertionError("the oracle accepted a call that breaks two rules")


@pytest.mark.python_surface
@pytest.mark.parametrize("case, call", PRECEDENCE, ids=[case for case, _ in PRECEDENCE])
def test_which_error_wins_with_a_type_error(impl: ModuleType, case: str, call: Callable[[Any], object]) -> None:
    """Two faults in one call get the oracle's error type (the contract's order), and change nothing."""
    cache, model = both(impl, 6, 2, 2, 2, 3)
    for c in (cache, model):
        for s in (0, 3):
            c.add_seq(s)
        c.append(0, 0, *make_chunk(2, 3, 3, 1, "float16"))
        c.fork(0, 1)
        c.free(3)
    want = _error_of(lambda: call(model))
    before = snapshot(cache, [0, 1], 2)
    with pytest.raises(Exception) as got:
        call(cache)
    assert got.type is want, f"{case}: raised {got.type.__name__} ({got.value}), but the contract's order gives {want.__name__}"
    assert_equal("snapshot(cache, [0, 1], 2)", snapshot(cache, [0, 1], 2), before, f"{case} changed the cache")


CONSTRUCTOR_PRECEDENCE: list[tuple[Any, ...]] = [
    (0, True, 1, 1, 1),  # num_blocks's value before block_size's type
    (-1, 1, 1, 1, "x"),
    (2**31, 1.0, 1, 1, 1),  # num_blocks past 2^31 - 1 before block_size's type
    (1.5, 0, 1, 1, 1),
    (4, 2, 1, 1, 0, "prefix_caching=1"),  # the sizes before prefix_caching
    (4, 2, 1, 1, 1.0, "prefix_caching=1"),
    (2**31 - 1, 2**31 - 1, 1, 1, True),  # d_head's type before memory
]


@pytest.mark.python_surface
@pytest.mark.parametrize("sizes", CONSTRUCTOR_PRECEDENCE, ids=map(repr, CONSTRUCTOR_PRECEDENCE))
def test_which_constructor_error_wins(impl: ModuleType, sizes: tuple[Any, ...]) -> None:
    """The constructor checks its sizes one after another, type then value, then prefix_caching, then memory."""
    kwargs = {"prefix_caching": 1} if sizes[-1] == "prefix_caching=1" else {}
    sizes = sizes[:5]
    want = _error_of(lambda: harness.model(*sizes, **kwargs))
    with pytest.raises(Exception) as got:
        impl.PagedKVCache(*sizes, **kwargs)
    assert got.type is want, f"PagedKVCache{sizes}: raised {got.type.__name__} ({got.value}), but the contract's order gives {want.__name__}"


def test_a_pool_too_large_to_allocate_is_memory_error(impl: ModuleType) -> None:
    """CONTRACT.md "A pool too large to allocate": K and V of 2^60 bytes (2^30 blocks of 2^28 positions),
    which no machine maps (x86-64 and arm64 address at most 2^57 bytes), and of 2^63 bytes or more, are
    MemoryError (a driver's out_of_memory, never an abort), and the implementation goes on."""
    for sizes in ((2**30, 2**28, 1, 1, 1), (2**31 - 1, 2**31 - 1, 1, 1, 1), (1, 2**61, 1, 1, 1)):
        with pytest.raises(MemoryError):
            impl.PagedKVCache(*sizes)
    cache, model = both(impl, 4, 2, 1, 1, 1)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(1, 3, 1, 2, "float16"))
    assert_matches_model(cache, model, [0])
