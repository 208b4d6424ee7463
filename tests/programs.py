"""Random programs of public calls, for the property tests of every area: the geometry and
append strategies, and a runner that applies the valid calls of a program to the cache under
test and the oracle's model in step (`run`), so that every expectation is the model's.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
from hypothesis import strategies as st

from tests import harness
from tests.assertions import assert_raises, assert_served, short
from oracle import ModelKVCache
from tests.strategies import INPUT_DTYPES, geometries, make_chunk

# (block_size, n_layers, n_kv_heads, d_head): each test sizes its own pool.
GEOMETRY = geometries(num_blocks=st.just(1)).map(lambda g: tuple(g[1:]))

# (seq index, layer index (mod L), tokens, seed, dtype, tricky)
APPEND = st.tuples(
    st.integers(0, 2), st.integers(0, 2), st.integers(1, 9), st.integers(0, 2**16), st.sampled_from(INPUT_DTYPES), st.booleans()
)

# add, fork, append and free, with ids from a small range: many are invalid and skipped by run_program.
OP = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("fork"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("append"), APPEND.map(lambda a: a[1:]), st.integers(0, 5)),
    st.tuples(st.just("free"), st.integers(0, 5)),
)


def new_cache(num_blocks: int, geometry: tuple[int, int, int, int]) -> tuple[Any, ModelKVCache]:
    """A cache under test and the model, of a pool of `num_blocks` and the geometry's other sizes."""
    harness.begin_example()  # each example makes one cache: its calls are the transcript of a failure
    return both(harness.impl(), num_blocks, *geometry)


def expected_gather(chunks: list[np.ndarray], heads: int, dims: int) -> np.ndarray:
    if not chunks:
        return np.zeros((heads, 0, dims), dtype=np.float16)
    return np.concatenate([c.astype(np.float16) for c in chunks], axis=1)


def run_program(cache: Any, model: ModelKVCache, ops: list[tuple[Any, ...]], geometry: tuple[int, int, int, int]) -> list[int]:
    """Apply the valid operations among `ops` to the model and the cache under test, in step (`run`, `attempt`): an
    append the model cannot fit must raise OutOfBlocks on the cache too. Returns the live ids."""
    _, n_layers, heads, dims = geometry
    live: list[int] = []
    for op in ops:
        if op[0] == "add" and op[1] not in live:
            run((cache, model), "add_seq", op[1])
            live.append(op[1])
        elif op[0] == "fork" and op[1] in live and op[2] not in live:
            run((cache, model), "fork", op[1], op[2])
            live.append(op[2])
        elif op[0] == "append" and op[2] in live:
            layer, tokens, seed, dtype, tricky = op[1]
            attempt((cache, model), "append", op[2], layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky))
        elif op[0] == "free" and op[1] in live:
            run((cache, model), "free", op[1])
            live.remove(op[1])
    return live


def both(impl: ModuleType, *sizes: int, **options: Any) -> tuple[Any, ModelKVCache]:
    """A cache of the implementation under test and the model, of the same sizes and keyword options."""
    return impl.PagedKVCache(*sizes, **options), harness.model(*sizes, **options)


def attempt(pair: tuple[Any, ModelKVCache], call: str, *args: Any) -> Any:
    """The same call on the model, then on the cache under test, in step: the cache must answer as the model
    does (add_seq's count through `assert_served`; where the model refuses the call, an error of its kind).
    Returns the cache's answer, or the exception it raised."""
    __tracebackhide__ = True
    cache, model = pair
    try:
        want = getattr(model, call)(*args)
    except Exception as exc:  # noqa: BLE001 - the model's error is the expectation
        return assert_raises(harness.expected_error(exc), written(call, args), lambda: getattr(cache, call)(*args))
    got = getattr(cache, call)(*args)
    if call == "add_seq":
        assert_served(got, want, written(call, args))
    return got


def run(pair: tuple[Any, ModelKVCache], call: str, *args: Any) -> Any:
    """`attempt`, for a call the test's script expects to succeed: a refusal (the model's, and the cache's with
    it) fails the test."""
    __tracebackhide__ = True
    got = attempt(pair, call, *args)
    if isinstance(got, BaseException):
        raise AssertionError(f"{written(call, args)} raised {got!r} on the model and the cache, but the test's script expects it to succeed") from got
    return got


def refused(pair: tuple[Any, ModelKVCache], error: type[BaseException], call: str, *args: Any) -> BaseException:
    """A call the contract refuses with `error` (for running out, the implementation's OutOfBlocks), in step
    (`attempt`): the cache must raise as the model does, and that must be `error`. Returns the cache's exception."""
    __tracebackhide__ = True
    got = attempt(pair, call, *args)
    if not isinstance(got, error):
        raise AssertionError(f"{written(call, args)}={short(repr(got))}, but should raise {error.__name__} [{written(call, args)}: the contract's row]")
    return got


def written(call: str, args: tuple[Any, ...]) -> str:
    """A call as a message shows it: `append(0, 1, <float16 [2, 3, 4]>, ...)`, an array by its dtype and shape."""
    shown = (f"<{a.dtype} {list(a.shape)}>" if isinstance(a, np.ndarray) else short(a) for a in args)
    return f"{call}({', '.join(shown)})"


class InStep:
    """The cache under test as a caller that takes no model sees it (the toy decoder): every call that changes it
    (add_seq, extend, fork, append, free) is made on the model first, in step (`run`); reads are the cache's."""

    def __init__(self, cache: Any, model: ModelKVCache) -> None:
        self.pair = (cache, model)

    def add_seq(self, *args: Any) -> Any:
        return run(self.pair, "add_seq", *args)

    def extend(self, *args: Any) -> Any:
        return run(self.pair, "extend", *args)

    def fork(self, *args: Any) -> Any:
        return run(self.pair, "fork", *args)

    def append(self, *args: Any) -> Any:
        return run(self.pair, "append", *args)

    def free(self, *args: Any) -> Any:
        return run(self.pair, "free", *args)

    def gather(self, *args: Any) -> Any:
        return self.pair[0].gather(*args)

    def seq_len(self, *args: Any) -> Any:
        return self.pair[0].seq_len(*args)
