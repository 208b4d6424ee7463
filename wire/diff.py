"""How a got value differs from the wanted one, in one line: the first differing entry.

Used by the suite's assertions and by transcript replay, so a failure says where two
block tables part, or at which head, position and dimension two float16 arrays do, with
both values.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def shorten(text: str, limit: int = 160) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def f16(bits: int) -> str:
    """A float16 bit pattern as hex and value: 0x3c00 (1.0)."""
    value = np.array([bits], dtype=np.uint16).view(np.float16)[0]
    return f"0x{bits:04x} ({value!r})" if not np.isfinite(value) else f"0x{bits:04x} ({float(value):g})"


def list_difference(got: Sequence[Any], want: Sequence[Any]) -> str | None:
    """None when equal; else the first index where they differ (or which is longer)."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"[{i}]={g!r}, but should be {w!r}"
    if len(got) != len(want):
        return f"length={len(got)}, but should be {len(want)}"
    return None


def array_difference(got: Any, want: Any, axes: str = "head, pos, dim") -> str | None:
    """None when both arrays have one dtype, one shape and the same bits (NaN and -0.0 exact); else the first difference.

    Floats are compared by bit pattern; the entry is named by `axes` when the array has that many.
    """
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        return f"dtype={g.dtype}, but should be {w.dtype}"
    if g.shape != w.shape:
        return f"shape={g.shape}, but should be {w.shape}"
    if g.dtype.kind != "f":
        bad = np.argwhere(g != w)
    else:
        bits = np.dtype(f"u{g.dtype.itemsize}")
        bad = np.argwhere(g.view(bits) != w.view(bits))
    if not len(bad):
        return None
    at = tuple(int(i) for i in bad[0])
    where = ", ".join(f"{name}={i}" for name, i in zip(axes.split(", "), at)) if len(at) == len(axes.split(", ")) else ", ".join(map(str, at))
    if g.dtype == np.float16:
        gv, wv = f16(int(g.view(np.uint16)[at])), f16(int(w.view(np.uint16)[at]))
    else:
        gv, wv = repr(g[at].item()), repr(w[at].item())
    return f"[{where}]={gv}, but should be {wv} ({len(bad)} of {g.size} values differ)"
