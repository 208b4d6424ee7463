"""Errors and the cache's lifetime: every error is raised before anything observable changes,
calls after close() raise ValueError, and neither a failed constructor nor a closed cache leaves
a failing clean-up behind.

CONTRACT.md "Errors" (the table's rows are also sent one by one in test_catalog.py's
test_bad_arguments, by the state machines' faults and by the error-* vectors).
"""

from __future__ import annotations

import gc
import sys
from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from tests import harness
from tests.assertions import assert_equal, assert_raises
from tests.harness import assert_matches_model
from tests.programs import GEOMETRY, OP, both, new_cache, refused, run, run_program
from tests.strategies import INPUT_DTYPES, make_chunk, model_blocks_needed

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
    cache, model = both(impl, 4, 2, 1, 2, 3)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(2, 1, 3, 0))
    run((cache, model), "close")
    assert_raises(ValueError, f"{name} after close()", lambda: call(cache))
    run((cache, model), "close")  # a second close does nothing
    assert_raises(ValueError, f"{name} after a second close()", lambda: call(cache))


@pytest.mark.python_surface
def test_with_closes_on_exit_even_on_error(impl: ModuleType) -> None:
    model = harness.model(4, 2, 1, 2, 3)
    with impl.PagedKVCache(4, 2, 1, 2, 3) as cache:
        run((cache, model), "add_seq", 0)
        assert_matches_model(cache, model)
    assert_raises(ValueError, "stats() after the with block", cache.stats)

    def divide_by_zero_inside_with() -> None:
        with impl.PagedKVCache(4, 2, 1, 2, 3) as other:
            made.append(other)
            1 / 0

    made: list[Any] = []
    assert_raises(ZeroDivisionError, "1 / 0 inside `with PagedKVCache(...)`", divide_by_zero_inside_with)
    assert_raises(ValueError, "add_seq(1) after a with block left on an error", lambda: made[0].add_seq(1))
    made[0].close()


@pytest.mark.python_surface
def test_numpy_integer_ids_and_layers_are_integers(impl: ModuleType) -> None:
    cache = impl.PagedKVCache(np.int64(4), np.int32(2), np.int16(2), np.uint8(2), np.int64(3))
    model = harness.model(4, 2, 2, 2, 3)
    run((cache, model), "add_seq", np.int64(7))
    run((cache, model), "append", np.int32(7), np.int64(1), *make_chunk(2, 3, 3, 1))
    run((cache, model), "fork", np.int64(7), np.uint16(8))
    assert_equal('seq_len(8, np.int8(1))', cache.seq_len(8, np.int8(1)), model.seq_len(8, 1), 'seq_len(8, np.int8(1))')
    assert_equal('block_table(np.int64(8))', cache.block_table(np.int64(8)).tolist(), model.block_table(8).tolist(), 'block_table(np.int64(8))')
    run((cache, model), "free", np.int64(7))
    assert_matches_model(cache, model)


@given(
    geometry=GEOMETRY,
    num_blocks=st.integers(1, 10),
    ops=st.lists(OP, max_size=30),
    pick=st.integers(0, 5),
    layer=st.integers(0, 2),
    excess=st.integers(1, 3),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(INPUT_DTYPES),
)
def test_an_out_of_blocks_append_changes_nothing(
    geometry: tuple[int, int, int, int],
    num_blocks: int,
    ops: list[tuple[Any, ...]],
    pick: int,
    layer: int,
    excess: int,
    seed: int,
    dtype: str,
) -> None:
    """An append sized by the model to `excess` blocks more than are free, after a random program: OutOfBlocks
    and nothing changes; then the largest append the model fits succeeds, with the model's data."""
    bs, n_layers, heads, dims = geometry
    cache, model = new_cache(num_blocks, geometry)
    live = run_program(cache, model, ops, geometry)
    if not live:
        run((cache, model), "add_seq", 0)
        live = [0]
    seq, li = live[pick % len(live)], layer % n_layers
    free = model.num_free_blocks()
    tokens = 1
    while model_blocks_needed(model, seq, li, tokens) < free + excess:
        tokens += 1
    note(f"append of {tokens} tokens to sequence {seq} layer {li} needs {free + excess} blocks, {free} free")
    refused((cache, model), harness.impl().OutOfBlocks, "append", seq, li, *make_chunk(heads, tokens, dims, seed, dtype, False))
    assert_matches_model(cache, model, when=f", after the refused append({seq}, {li}) of {tokens} positions")  # the model as it was
    # and the cache still works: the largest append that fits succeeds
    while tokens > 1 and model_blocks_needed(model, seq, li, tokens) > free:
        tokens -= 1
    if model_blocks_needed(model, seq, li, tokens) <= free:
        run((cache, model), "append", seq, li, *make_chunk(heads, tokens, dims, seed, dtype, False))
    assert_matches_model(cache, model)
    cache.close()


BAD_SIZES: list[tuple[tuple[Any, ...], type[BaseException]]] = [
    ((0, 2, 1, 1, 1), ValueError),
    ((4, 2, 1, 1, 0), ValueError),
    ((4, 2.0, 1, 1, 1), TypeError),
    ((4, 2, 1, True, 1), TypeError),
]


@pytest.mark.python_surface  # finalisers and the garbage collector: a driver has none
@pytest.mark.parametrize("sizes, error", BAD_SIZES)
def test_a_constructor_that_raises_leaves_nothing_failing_behind(
    impl: ModuleType, sizes: tuple[Any, ...], error: type[BaseException]
) -> None:
    """A constructor that raises leaves no half-built object whose clean-up fails later.

    The half-built object is finalised when it is collected; an exception there (say a
    finaliser that calls a close() which releases a pool that was never made) is swallowed
    by Python and only reported to sys.unraisablehook, so this test listens there.
    Written for the mutants of `PagedKVCache.__init__` that started with `_closed` false,
    when `paged` had a `__del__`; it has none now, and the test stays for ports that do.
    """
    reported: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        assert_raises(error, f"PagedKVCache{sizes!r}", lambda: impl.PagedKVCache(*sizes))
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert_equal("what clean-up raised", [repr(r.exc_value) for r in reported], [], f"PagedKVCache{sizes!r} refused, then gc.collect()")


@pytest.mark.python_surface  # finalisers and the garbage collector: a driver has none
def test_a_closed_and_collected_cache_reports_nothing(impl: ModuleType) -> None:
    """Closing, then dropping the last reference, runs no failing clean-up either."""
    reported: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = reported.append
    try:
        cache, model = both(impl, 4, 2, 1, 1, 2)
        run((cache, model), "add_seq", 0)
        run((cache, model), "close")
        del cache
        gc.collect()
        model = harness.model(4, 2, 1, 1, 2)
        with impl.PagedKVCache(4, 2, 1, 1, 2) as cache2:
            run((cache2, model), "add_seq", 1)
        del cache2
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert_equal("what clean-up raised", [repr(r.exc_value) for r in reported], [], "close(), then gc.collect()")


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
    for s in (0, 3):
        run((cache, model), "add_seq", s)
    run((cache, model), "append", 0, 0, *make_chunk(2, 3, 3, 1, "float16"))
    run((cache, model), "fork", 0, 1)
    run((cache, model), "free", 3)
    want = _error_of(lambda: call(model))
    assert_raises(want, case, lambda: call(cache))
    assert_matches_model(cache, model, when=f", after {case}")


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
    assert_raises(want, f"PagedKVCache{sizes!r}{', prefix_caching=1' if kwargs else ''}", lambda: impl.PagedKVCache(*sizes, **kwargs))


def test_a_pool_too_large_to_allocate_is_memory_error(impl: ModuleType) -> None:
    """CONTRACT.md "A pool too large to allocate": K and V of 2^60 bytes (2^30 blocks of 2^28 positions),
    which no machine maps (x86-64 and arm64 address at most 2^57 bytes), and of 2^63 bytes or more, are
    MemoryError (a driver's out_of_memory, never an abort), and the implementation goes on."""
    for sizes in ((2**30, 2**28, 1, 1, 1), (2**31 - 1, 2**31 - 1, 1, 1, 1), (1, 2**61, 1, 1, 1)):
        assert_raises(MemoryError, f"PagedKVCache{sizes!r}", lambda: impl.PagedKVCache(*sizes))
    cache, model = both(impl, 4, 2, 1, 1, 1)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(1, 3, 1, 2, "float16"))
    assert_matches_model(cache, model, [0])


# The argument checks take what an engine passes (two float16 ndarrays of the cache's H and D) before
# the ordered checks: a bad chunk beside a good float16 one, a list beside one, and wrong heads whose
# count a token count happens to equal must still get what the ordered checks give.
BESIDE_FLOAT16 = [(which, dtype) for which in ("k", "v") for dtype in ("complex64", "bool", "object", "U4")]


@pytest.mark.python_surface
@pytest.mark.parametrize("which, dtype", BESIDE_FLOAT16, ids=[f"{w} {d}" for w, d in BESIDE_FLOAT16])
def test_a_bad_dtype_beside_a_float16_chunk_is_a_type_error(impl: ModuleType, which: str, dtype: str) -> None:
    cache, model = both(impl, 4, 2, 1, 2, 3)
    chunk = dict(zip("kv", make_chunk(2, 1, 3, 0, "float16")))
    chunk[which] = chunk[which].astype(dtype)
    run((cache, model), "add_seq", 0)
    refused((cache, model), TypeError, "append", 0, 0, chunk["k"], chunk["v"])
    assert_matches_model(cache, model)


@pytest.mark.python_surface
@pytest.mark.parametrize("which", ["k", "v"])
def test_a_list_beside_a_float16_chunk_is_stored(impl: ModuleType, which: str) -> None:
    cache, model = both(impl, 4, 2, 1, 2, 3)
    chunk: dict[str, Any] = dict(zip("kv", make_chunk(2, 3, 3, 1, "float16")))
    chunk[which] = chunk[which].astype(np.float64).tolist()
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, chunk["k"], chunk["v"])
    assert_matches_model(cache, model)


@pytest.mark.parametrize("heads", [1, 3])
def test_wrong_heads_are_refused_when_the_token_count_is_the_head_count(impl: ModuleType, heads: int) -> None:
    """A cache of 2 heads, a float16 chunk of `heads` heads and 2 tokens: ValueError, nothing stored."""
    cache, model = both(impl, 4, 2, 1, 2, 3)
    k, v = make_chunk(heads, 2, 3, 2, "float16")
    run((cache, model), "add_seq", 0)
    refused((cache, model), ValueError, "append", 0, 0, k, v)
    assert_matches_model(cache, model)


# CONTRACT.md "Inputs only Python can pass" (issue 52): points a port author had to guess, each as paged answers.


@pytest.mark.python_surface
def test_numpy_scalars_as_k_and_v(impl: ModuleType) -> None:
    """k and v are what np.asarray makes of them: a NumPy scalar alone is 0-d (ValueError), NumPy scalars in nested
    lists are an array of their common dtype (stored)."""
    cache, model = both(impl, 4, 2, 1, 1, 1)
    run((cache, model), "add_seq", 0)
    refused((cache, model), ValueError, "append", 0, 0, np.float16(1.0), np.float16(2.0))
    run((cache, model), "append", 0, 0, [[[np.float32(1.5)], [np.float16(-0.0)]]], [[[np.int8(3)], [np.float64(2.5)]]])
    assert_matches_model(cache, model)


@pytest.mark.python_surface
@pytest.mark.parametrize("flag", [1, 0, None, "yes", np.bool_(True), np.bool_(False)], ids=repr)
def test_prefix_caching_takes_only_a_bool(impl: ModuleType, flag: Any) -> None:
    """prefix_caching is a Python bool: anything else, np.bool_ included, is TypeError, as the oracle raises."""
    want = _error_of(lambda: harness.model(4, 2, 1, 1, 1, prefix_caching=flag))
    assert_equal(f"the model's error for prefix_caching={flag!r}", want.__name__, "TypeError", "CONTRACT.md, Inputs only Python can pass")
    assert_raises(want, f"PagedKVCache(4, 2, 1, 1, 1, prefix_caching={flag!r})", lambda: impl.PagedKVCache(4, 2, 1, 1, 1, prefix_caching=flag))


@pytest.mark.python_surface
@pytest.mark.parametrize("caching", [False, True], ids=["off", "prefix caching"])
@pytest.mark.parametrize("tokens", [None, 5, 2.0], ids=repr)
def test_tokens_that_are_not_iterable_are_a_type_error(impl: ModuleType, caching: bool, tokens: Any) -> None:
    """add_seq's and extend's tokens must be iterable (None, an int: TypeError), prefix caching on or off; nothing changes."""
    pair = both(impl, 4, 2, 1, 1, 1, prefix_caching=caching)
    run(pair, "add_seq", 0, [1, 2])
    refused(pair, TypeError, "add_seq", 1, tokens)
    refused(pair, TypeError, "extend", 0, tokens)
    refused(pair, ValueError, "add_seq", 0, tokens)  # the id first: live
    assert_matches_model(*pair)


@pytest.mark.python_surface
def test_token_ids_past_64_bits_are_tokens_of_their_own(impl: ModuleType) -> None:
    """A token id of 2^63 or more is a token, other than every id of the same low 63 or 64 bits."""
    pair = both(impl, 16, 1, 1, 1, 1, prefix_caching=True)
    wide = [2**63, 2**64 + 1, 2**70, 2**63 + 2]
    for seq, prompt in enumerate((wide + [5], [t % 2**63 for t in wide] + [6], [t % 2**64 for t in wide] + [6], wide + [6])):
        run(pair, "add_seq", seq, prompt)  # served: the oracle's count (4 only for the same wide ids)
        run(pair, "append", seq, 0, *make_chunk(1, len(prompt) - pair[1].seq_len(seq), 1, seq, "float16"))
    assert_matches_model(*pair)


@pytest.mark.python_surface
def test_sequence_ids_past_64_bits_are_sequences_of_their_own(impl: ModuleType) -> None:
    """In process, an id outside the signed 64 bits is a sequence, other than every id of the same low bits."""
    pair = both(impl, 16, 2, 1, 1, 1)
    ids = [1, 2**64 + 1, -(2**64) + 1, 2**63, -(2**63) - 1, 2**100 + 1]
    for n, seq in enumerate(ids):
        run(pair, "add_seq", seq)
        run(pair, "append", seq, 0, *make_chunk(1, 1, 1, n, "float16"))
    run(pair, "free", 1)
    run(pair, "fork", 2**64 + 1, 2**65)
    refused(pair, KeyError, "seq_len", 1)
    assert_matches_model(*pair)
