"""Argument checks shared by every call: the contract's TypeError and ValueError rows.

Each check either returns the normalised value or raises before the cache changes.
"""

import operator
from typing import Any

import numpy as np
from numpy.typing import NDArray


def as_int(value: object, what: str) -> int:
    """An integer (Python or NumPy) as `int`; bool and everything else raise TypeError."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None


def as_sizes(sizes: tuple[object, ...], prefix_caching: object) -> tuple[int, int, int, int, int]:
    """The constructor's (num_blocks, block_size, n_layers, n_kv_heads, d_head): integers of at least 1;
    `prefix_caching` a bool."""
    names = ("num_blocks", "block_size", "n_layers", "n_kv_heads", "d_head")
    n, b, l, h, d = (as_int(size, name) for size, name in zip(sizes, names))
    if min(n, b, l, h, d) < 1:
        raise ValueError(f"sizes must be at least 1, got (num_blocks, block_size, L, H, D) = {(n, b, l, h, d)}")
    if not isinstance(prefix_caching, bool):
        raise TypeError(f"prefix_caching must be a bool, got {type(prefix_caching).__name__}")
    return n, b, l, h, d


def as_tokens(tokens: object) -> list[int]:
    """Token ids: integers >= 0 (bool excluded), from any iterable; else TypeError or ValueError."""
    try:
        items = list(tokens)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"tokens must be an iterable of integers, got {type(tokens).__name__}") from None
    ids = [as_int(t, "token id") for t in items]
    if ids and min(ids) < 0:
        raise ValueError(f"token ids must be at least 0, got {min(ids)}")
    return ids


def as_chunk(k: object, v: object, n_kv_heads: int, d_head: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """k and v as real-valued arrays of one shape [H, T, D] with T >= 1; else TypeError or ValueError.

    k is checked before v; written out flat because every append runs these checks.
    """
    k_arr = np.asarray(k)
    v_arr = np.asarray(v)
    real_3d(k_arr, "k")
    real_3d(v_arr, "v")
    shape = k_arr.shape
    if shape != v_arr.shape:
        raise ValueError(f"k and v shapes differ: {shape} != {v_arr.shape}")
    heads, tokens, dims = shape
    if heads != n_kv_heads or dims != d_head:
        raise ValueError(f"k and v must be [{n_kv_heads}, T, {d_head}] for this cache, got {shape}")
    if tokens == 0:
        raise ValueError("an append needs at least one position (T = 0)")
    return k_arr, v_arr


def real_3d(arr: NDArray[Any], name: str) -> None:
    """TypeError unless arr holds real numbers (bool excluded), then ValueError unless it is 3-D."""
    if arr.dtype.kind not in ("i", "u", "f"):  # signed, unsigned, floating: not b (bool), c, O, U, ...
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 3:
        raise ValueError(f"{name} must be 3-D [n_kv_heads, T, d_head], got shape {arr.shape}")
