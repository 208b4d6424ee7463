"""Argument checks shared by every call: the contract's TypeError and ValueError rows.

Each check either returns the normalised value or raises before the cache changes.
"""

import math
import operator
from typing import Any, Mapping, TypeVar

import numpy as np
from numpy.typing import NDArray


def as_int(value: object, what: str) -> int:
    """An integer (Python or NumPy) as `int`; bool and everything else raise TypeError."""
    if type(value) is int:  # the common case, first (bool is a subclass of int, not int itself)
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None


MAX_BLOCKS = 2**31 - 1  # block ids are the int32 of block_table (CONTRACT.md, Integer ranges)
POOL_BYTES_LIMIT = 2**63  # a pool of this many bytes or more is never allocated: no 64-bit address space holds it


T = TypeVar("T")


def live(seqs: Mapping[int, T], seq_id: object) -> T:
    """The live sequence `seq_id` names: TypeError for an id that is not an integer, KeyError for one not live."""
    sid = as_int(seq_id, "seq_id")
    try:
        return seqs[sid]
    except KeyError:
        raise KeyError(f"sequence {sid} is not live") from None


def layer_index(layer: object, n_layers: int) -> int:
    """The layer index `layer` names: TypeError for one that is not an integer, ValueError outside 0 .. L-1."""
    li = as_int(layer, "layer")
    if not 0 <= li < n_layers:
        raise ValueError(f"layer {li} is outside 0 .. {n_layers - 1}")
    return li


def as_sizes(sizes: tuple[object, ...], prefix_caching: object) -> tuple[int, int, int, int, int]:
    """The constructor's (num_blocks, block_size, n_layers, n_kv_heads, d_head): integers of at least 1,
    num_blocks at most 2^31 - 1; `prefix_caching` a bool. Argument by argument (CONTRACT.md, "Which
    error wins"): each size's type, then its value, before the next size is looked at."""
    names = ("num_blocks", "block_size", "n_layers", "n_kv_heads", "d_head")
    out = []
    for size, name in zip(sizes, names):
        value = as_int(size, name)
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
        if name == "num_blocks" and value > MAX_BLOCKS:
            raise ValueError(f"num_blocks must be at most 2^31 - 1 (block ids are int32), got {value}")
        out.append(value)
    if not isinstance(prefix_caching, bool):
        raise TypeError(f"prefix_caching must be a bool, got {type(prefix_caching).__name__}")
    n, b, l, h, d = out
    return n, b, l, h, d


def as_window(sliding_window: object, what: str) -> int | None:
    """The constructor's `sliding_window`: None (off), or an integer from 2 to 2^31 - 1 (CONTRACT.md,
    "Sliding window"): the positions one token attends to, itself included."""
    if sliding_window is None:
        return None
    value = as_int(sliding_window, what)
    if not 2 <= value <= MAX_BLOCKS:
        raise ValueError(f"{what} must be from 2 to 2^31 - 1, got {value}")
    return value


def as_layer_windows(layer_windows: object, window: int | None, n_layers: int) -> list[int | None] | None:
    """The constructor's `layer_windows` (CONTRACT.md, "Hybrid models"): None, or a list or tuple of n_layers
    entries, each None (full attention) or a window as `sliding_window` takes it. `window` is the checked
    `sliding_window`: both given is ValueError; then the container's type (TypeError), its length
    (ValueError), and each entry in order, its type then its value."""
    if layer_windows is None:
        return None
    if window is not None:
        raise ValueError("sliding_window and layer_windows are both given: sliding_window=W is layer_windows=(W,) * n_layers")
    if not isinstance(layer_windows, (list, tuple)):
        raise TypeError(f"layer_windows must be a list or tuple, got {type(layer_windows).__name__}")
    if len(layer_windows) != n_layers:
        raise ValueError(f"layer_windows has {len(layer_windows)} entries, one a layer is {n_layers}")
    return [as_window(w, f"layer_windows[{i}]") for i, w in enumerate(layer_windows)]


def zeroed_pools(shape: tuple[int, ...]) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
    """A cache's K and V pools: two zeroed float16 arrays of `shape`, or MemoryError naming the bytes.

    Both pools together need 4 bytes a position of every layer and head, 4 * N * B * L * H * D;
    at 2^63 or more that is MemoryError without trying (CONTRACT.md, "A pool too large to
    allocate"). NumPy refuses a size it cannot index with ValueError ("array is too big") and
    memory the machine will not give with MemoryError; the contract has one kind for both.
    np.zeros maps the pages lazily, so a large pool that is mostly unused costs address space,
    not memory.
    """
    nbytes = 4 * math.prod(shape)
    if nbytes >= POOL_BYTES_LIMIT:
        raise MemoryError(f"a pool of shape {shape}, K and V, needs {nbytes} bytes: 2^63 or more")
    try:
        return np.zeros(shape, dtype=np.float16), np.zeros(shape, dtype=np.float16)
    except (MemoryError, ValueError):
        raise MemoryError(f"cannot allocate a pool of shape {shape}, K and V: {nbytes} bytes") from None


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

    k is checked before v, each check in the order CONTRACT.md's "Which error wins" gives.
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


def as_seq_ids(seq_ids: object) -> list[int]:
    """A batch's sequence ids (CONTRACT.md, "Page tables for kernels"): an iterable of integers, every one's
    type checked before any is looked up; else TypeError."""
    try:
        items = list(seq_ids)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"seq_ids must be an iterable of integers, got {type(seq_ids).__name__}") from None
    return [as_int(s, "seq_id") for s in items]


def as_page_size(page_size: object, block_size: int) -> int:
    """A kernel's page size P: None for B, else an integer from 1 that divides B (TypeError, ValueError)."""
    if page_size is None:
        return block_size
    value = as_int(page_size, "page_size")
    if value < 1 or block_size % value:
        raise ValueError(f"page_size must be at least 1 and divide block_size {block_size}, got {value}")
    return value


def as_span(start: object, count: object, length: int) -> tuple[int, int]:
    """slot_mapping's positions start .. start+count-1: start then count, each an integer (TypeError) of at
    least 0 (ValueError), then within the layer's `length` positions (ValueError)."""
    first = as_int(start, "start")
    if first < 0:
        raise ValueError(f"start must be at least 0, got {first}")
    n = as_int(count, "count")
    if n < 0:
        raise ValueError(f"count must be at least 0, got {n}")
    if first + n > length:
        raise ValueError(f"positions {first} .. {first + n - 1} are past the layer's {length} positions")
    return first, n


def batch(seqs: Mapping[int, T], seq_ids: list[int]) -> list[T]:
    """The live sequences a batch of checked ids names, in order: KeyError for the first id not live, ValueError
    for the first repeated (whichever comes first)."""
    out, seen = [], set()
    for sid in seq_ids:
        seq = seqs.get(sid)
        if seq is None:
            raise KeyError(f"sequence {sid} is not live")
        if sid in seen:
            raise ValueError(f"sequence {sid} is named twice in one batch")
        seen.add(sid)
        out.append(seq)
    return out
