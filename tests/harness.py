"""The harness: which implementation is under test, and how its state is compared with the oracle.

Tests reach the cache only through `impl()` (a module exporting PagedKVCache and
OutOfBlocks, chosen by `--impl` or PAGED_IMPL) and its public calls, so the same
suite gates any port. Never reads a private attribute.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Iterable

import numpy as np

from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks

_impl_name = os.environ.get("PAGED_IMPL") or "paged"


def set_impl_name(name: str) -> None:
    global _impl_name
    _impl_name = name


def impl() -> ModuleType:
    """The module under test; it must export PagedKVCache and OutOfBlocks."""
    module = importlib.import_module(_impl_name)
    missing = [n for n in ("PagedKVCache", "OutOfBlocks") if not hasattr(module, n)]
    if missing:
        raise ImportError(f"implementation module {_impl_name!r} does not export {', '.join(missing)}")
    return module


def same_bits(a: Any, b: Any) -> bool:
    """Equal shape, dtype float16, and the very same float16 bit patterns (NaN and -0.0 included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype == np.float16 and a.shape == b.shape and np.array_equal(a.view(np.uint16), b.view(np.uint16))


def expected_error(model_error: BaseException) -> type[BaseException]:
    """The implementation's exception type for an error the model raised."""
    if isinstance(model_error, ModelOutOfBlocks):
        return impl().OutOfBlocks  # type: ignore[no-any-return]
    return type(model_error)


def snapshot(cache: Any, seqs: Iterable[int], n_layers: int) -> dict[str, Any]:
    """Every observable of the cache for the given live sequences: stats, tables, lengths, gathers."""
    state: dict[str, Any] = {"stats": dict(cache.stats()), "free": cache.num_free_blocks()}
    for s in seqs:
        state[f"table {s}"] = cache.block_table(s).tolist()
        for layer in range(n_layers):
            state[f"len {s}/{layer}"] = cache.seq_len(s, layer)
            for name, arr in zip("kv", cache.gather(s, layer)):
                state[f"{name} {s}/{layer}"] = (arr.shape, str(arr.dtype), arr.tobytes())  # the raw bits
    return state


def assert_matches_model(cache: Any, model: ModelKVCache, seqs: Iterable[int] | None = None) -> None:
    """The cache's stats, free count, every live table and length, and the given sequences' gathers equal the model's."""
    assert cache.stats() == model.stats(), f"stats {cache.stats()} != model {model.stats()}"
    assert cache.num_free_blocks() == model.num_free_blocks()
    assert cache.stats()["free"] + cache.stats()["used"] + cache.stats()["cached"] == model.num_blocks
    for s in model.tables:
        table = cache.block_table(s)
        assert table.dtype == np.int32 and table.ndim == 1, f"block_table({s}) is {table.dtype} {table.shape}"
        assert table.tolist() == model.block_table(s).tolist(), (
            f"block_table({s}) = {table.tolist()}, model says {model.block_table(s).tolist()}"
        )
        for layer in range(model.n_layers):
            assert cache.seq_len(s, layer) == model.seq_len(s, layer), f"seq_len({s}, {layer})"
    for s in model.tables if seqs is None else seqs:
        for layer in range(model.n_layers):
            got, want = cache.gather(s, layer), model.gather(s, layer)
            for name, g, w in zip("kv", got, want):
                assert isinstance(g, np.ndarray) and g.flags.c_contiguous, f"gather({s}, {layer}) {name} not C-contiguous"
                assert same_bits(g, w), f"gather({s}, {layer}) {name}: got {g.shape} {g.dtype}, model {w.shape}\n{g}\n!=\n{w}"
