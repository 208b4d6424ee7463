"""Fields of the wire protocol: integers, lists, shapes and float16 payloads as text.

Every rule of docs/PROTOCOL.md "Lines and fields" lives here once, for the server, the
client and the transcripts alike. A field that does not parse raises ProtocolError.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from .diff import shorten

VERSION = 1
EMPTY = "-"  # an empty list or payload
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


class ProtocolError(Exception):
    """A request or response that breaks the protocol itself (not a contract error)."""


SMALL_INTS = {str(n): n for n in range(-8, 4096)}  # the ones that travel most: lengths, ids, counts


def parse_int(text: str, what: str = "integer") -> int:
    """A decimal integer that fits in a signed 64-bit integer: ASCII digits, after a `-` when negative
    (no `+`, no spaces); leading zeros are allowed (`007` is 7, `-0` is 0: docs/PROTOCOL.md)."""
    small = SMALL_INTS.get(text)
    if small is not None:
        return small
    negative = text.startswith("-")
    body = text[1:] if negative else text
    if not body.isdigit() or not body.isascii():
        raise ProtocolError(f"{what} {shorten(text, 40)!r} is not a decimal integer")
    digits = body.lstrip("0") or "0"
    if len(digits) > 19:  # past 2^63 whatever the digits (and no int() of thousands of them)
        raise ProtocolError(f"{what} {shorten(text, 40)} does not fit in 64 bits")
    value = -int(digits) if negative else int(digits)
    if not I64_MIN <= value <= I64_MAX:
        raise ProtocolError(f"{what} {text} does not fit in 64 bits")
    return value


def format_list(values: Iterable[int]) -> str:
    """Integers joined by ',' (no spaces); '-' when there are none."""
    text = ",".join(str(int(v)) for v in values)
    return text or EMPTY


def parse_list(text: str, what: str = "list") -> list[int]:
    if text == EMPTY:
        return []
    return [parse_int(part, what) for part in text.split(",")]


def format_payload(values: NDArray[np.float16]) -> str:
    """float16 values in C order, each its bit pattern as 4 lowercase hex digits, most significant first."""
    if values.size == 0:
        return EMPTY
    bits = np.ascontiguousarray(values, dtype=np.float16).view(np.uint16)
    return bits.astype(">u2").tobytes().hex()


def parse_payload(text: str, shape: Sequence[int]) -> NDArray[np.float16]:
    """The float16 array of `shape` that `text` spells; ProtocolError unless it has exactly that many values."""
    count = math.prod(shape)
    if text == EMPTY:
        if count:
            raise ProtocolError(f"payload is empty, shape {format_list(shape)} needs {count} values")
        return np.zeros(shape, dtype=np.float16)
    if len(text) != 4 * count:
        raise ProtocolError(f"payload has {len(text)} hex digits, shape {format_list(shape)} needs {4 * count}")
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        raise ProtocolError("payload is not hex") from None
    if len(raw) != 2 * count:  # fromhex skips whitespace: a tab inside the field is no hex digit either
        raise ProtocolError("payload is not hex")
    return np.frombuffer(raw, dtype=">u2").astype(np.uint16).view(np.float16).reshape(shape)


def parse_shape(text: str) -> tuple[int, ...]:
    shape = tuple(parse_list(text, "dimension"))
    if any(d < 0 for d in shape):
        raise ProtocolError(f"shape {text} has a negative dimension")
    return shape


# `new`'s options after the five sizes (docs/PROTOCOL.md): each a keyword of the constructor, and the
# capability word a driver announces when it takes it. `prefix_caching` is a bare word, `sliding_window=W`
# carries its value, `layer_windows=X0,X1,...` one entry a layer (a decimal W, or `none` for full attention).
CAPABILITY = {"prefix_caching": "prefix_caching", "sliding_window": "sliding_window", "layer_windows": "hybrid"}
NEW_OPTIONS = tuple(CAPABILITY)
NEW_FORM = "new N B L H D [prefix_caching] [sliding_window=W] [layer_windows=X,...]"
FULL_ATTENTION = "none"  # a full-attention layer's entry in layer_windows=

# The page tables a kernel reads (docs/PROTOCOL.md, CONTRACT.md "Page tables for kernels"): no option of `new`,
# three verbs that a driver answers when it announces the capability (a Python module: its cache has the methods).
PAGE_TABLES = "page_tables"
PAGE_TABLE_VERBS = ("page_table", "slot_mapping", "kv_pages")


def parse_new_options(words: Sequence[str]) -> dict[str, Any]:
    """The constructor's keyword arguments that `new`'s option words spell (in any order, each at most once);
    ProtocolError for an unknown word, one given twice, a W that is not a decimal integer, or a layer_windows
    entry that is neither a decimal integer nor `none`. A value that parses reaches the constructor as it is
    (its range, and layer_windows' length, are the contract's to check)."""
    kwargs: dict[str, Any] = {}
    for word in words:
        name, eq, value = word.partition("=")
        if name in kwargs:
            raise ProtocolError(f"{name} is given twice ({NEW_FORM})")
        if word == "prefix_caching":
            kwargs[name] = True
        elif name == "sliding_window" and eq:
            kwargs[name] = parse_int(value, "sliding_window")
        elif name == "layer_windows" and eq:
            entries = [] if value == EMPTY else value.split(",")
            kwargs[name] = tuple(None if x == FULL_ATTENTION else parse_int(x, "layer window") for x in entries)
        else:
            raise ProtocolError(f"unknown option {shorten(word, 40)!r} ({NEW_FORM})")
    return kwargs


def format_layer_windows(windows: object) -> str:
    """`layer_windows=`'s value: each entry a decimal W or `none`, joined by ',' (`-` for no entry, as lists).
    TypeError for a value with no wire form: not a list or tuple, or an entry neither None nor an integer (the
    contract's TypeError rows, the Python surface's)."""
    if not isinstance(windows, (list, tuple)):
        raise TypeError(f"layer_windows must be a list or tuple, got {windows!r} (no wire form)")
    return ",".join(FULL_ATTENTION if w is None else str(wire_int(w, "layer window")) for w in windows) or EMPTY


def new_fields(
    sizes: Iterable[object], prefix_caching: bool = False, sliding_window: object = None, layer_windows: object = None,
) -> list[str]:
    """The fields of the request `new` for `PagedKVCache(*sizes, prefix_caching=..., sliding_window=...,
    layer_windows=...)`: an option only when it is not its default. TypeError for a value with no wire form
    (as `wire_int`, `format_layer_windows`)."""
    names = ("num_blocks", "block_size", "n_layers", "n_kv_heads", "d_head")
    fields = [str(wire_int(s, names[i] if i < len(names) else "size")) for i, s in enumerate(sizes)]
    if prefix_caching:
        fields.append("prefix_caching")
    if sliding_window is not None:
        fields.append(f"sliding_window={wire_int(sliding_window, 'sliding_window')}")
    if layer_windows is not None:
        fields.append(f"layer_windows={format_layer_windows(layer_windows)}")
    return fields


def format_stats(stats: dict[str, int]) -> str:
    return " ".join(f"{key}={int(stats[key])}" for key in ("free", "used", "cached", "evictions"))


def parse_stats(fields: Sequence[str]) -> dict[str, int]:
    keys = ("free", "used", "cached", "evictions")
    if len(fields) != 4:
        raise ProtocolError(f"stats has {len(fields)} fields, not 4")
    out: dict[str, int] = {}
    for key, field in zip(keys, fields):
        name, _, value = field.partition("=")
        if name != key:
            raise ProtocolError(f"stats field {field!r} is not {key}=N")
        out[key] = parse_int(value, key)
    return out


# -- calls as request fields ------------------------------------------------------------------


def wire_int(value: object, what: str) -> int:
    """An integer for the wire; other values (bool included) have no wire form: TypeError, as the contract's row."""
    if type(value) is int:  # the common case, first (a bool's type is bool)
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r} (no wire form)")
    return int(value)


def wire_chunk(x: Any, what: str) -> NDArray[np.float16]:
    """An array as the float16 a driver is given: real dtypes are rounded here (CONTRACT.md), others have no wire form."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{what} must hold real numbers, got dtype {arr.dtype} (no wire form)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # overflow to inf is float16's rounding
        return arr.astype(np.float16)


def pool_pages(num_blocks: int, block_size: int, page_size: object) -> int:
    """The pages of a pool of N blocks of B slots cut into pages of P; 0 for a P that does not divide B (the
    request then asks for no page, and the driver refuses P)."""
    if isinstance(page_size, bool) or not isinstance(page_size, (int, np.integer)) or page_size < 1 or block_size % page_size:
        return 0
    return int(num_blocks) * (int(block_size) // int(page_size))


PAGE_CALL_PARAMETERS = {"page_table": ("seq_ids", "layer", "page_size"), "kv_pages": ("layer", "page_size")}


def page_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any], sizes: tuple[int, int]) -> tuple[Any, ...]:
    """The wire arguments of a page-table call on a cache of (num_blocks, block_size), its defaults filled in:
    `page_table(seq_ids, layer, page_size=None)` sends B for None; `kv_pages(layer, page_size=None)` asks for
    every page (FIRST 0, COUNT the pool's pages). `slot_mapping`'s arguments as they are."""
    if name not in PAGE_CALL_PARAMETERS:
        return (*args, *kwargs.values())
    params = PAGE_CALL_PARAMETERS[name]
    bound = {"page_size": None, **dict(zip(params, args)), **kwargs}
    if len(args) > len(params) or set(bound) != set(params):
        raise TypeError(f"{name}() takes {', '.join(params)}, got {len(args)} arguments and {sorted(kwargs)}")
    num_blocks, block_size = sizes
    page_size = block_size if bound["page_size"] is None else bound["page_size"]
    if name == "page_table":
        return bound["seq_ids"], bound["layer"], page_size
    return bound["layer"], page_size, 0, pool_pages(num_blocks, block_size, page_size)


def call_fields(name: str, *args: Any) -> list[str]:
    """The fields after the handle of the request for the Python call `name(*args)` (defaults filled in).

    TypeError for an argument with no wire form (a bool id, a complex chunk): the contract's
    TypeError rows belong to the Python surface.
    """
    if name in ("gather", "seq_len"):  # the most frequent first: the harness's observations
        layer = args[1] if len(args) > 1 else 0
        return [str(wire_int(args[0], "seq_id")), str(wire_int(layer, "layer"))]
    if name == "block_table" and len(args) > 1:  # the table of a layer's group (hybrid models)
        return [str(wire_int(args[0], "seq_id")), str(wire_int(args[1], "layer"))]
    if name in ("block_table", "free"):
        return [str(wire_int(args[0], "seq_id"))]
    if name in ("stats", "num_free_blocks", "close"):
        return []
    if name == "append":
        k, v = wire_chunk(args[2], "k"), wire_chunk(args[3], "v")
        ints = [str(wire_int(args[0], "seq_id")), str(wire_int(args[1], "layer"))]
        return [*ints, format_list(k.shape), format_list(v.shape), format_payload(k), format_payload(v)]
    if name in ("add_seq", "extend"):
        fields = [str(wire_int(args[0], "seq_id"))]
        if len(args) > 1 and args[1] is not None:
            fields.append(format_list(wire_int(t, "token") for t in args[1]))
        return fields
    if name == "fork":
        return [str(wire_int(args[0], "parent")), str(wire_int(args[1], "child"))]
    if name == "page_table":  # (seq_ids, layer, page_size): `page_call` filled in the default
        ints = [str(wire_int(args[1], "layer")), str(wire_int(args[2], "page_size"))]
        return [*ints, format_list(wire_int(s, "seq_id") for s in args[0])]
    if name in ("slot_mapping", "kv_pages"):  # (seq_id, layer, start, count), (layer, page_size, first, count)
        names = ("seq_id", "layer", "start", "count") if name == "slot_mapping" else ("layer", "page_size", "first", "count")
        return [str(wire_int(a, what)) for a, what in zip(args, names, strict=True)]
    raise ValueError(f"no request for {name}")
