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
    """None when both are float16 arrays of one shape with the same bits (NaN and -0.0 exact); else the first difference."""
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype:
        return f"dtype={g.dtype}, but should be {w.dtype}"
    if g.shape != w.shape:
        return f"shape={g.shape}, but should be {w.shape}"
    if g.dtype != np.float16:
        return None if np.array_equal(g, w) else "values differ"
    gb, wb = g.view(np.uint16), w.view(np.uint16)
    bad = np.argwhere(gb != wb)
    if not len(bad):
        return None
    at = tuple(int(i) for i in bad[0])
    where = ", ".join(f"{name}={i}" for name, i in zip(axes.split(", "), at)) if len(at) == len(axes.split(", ")) else str(at)
    return f"[{where}]={f16(int(gb[at]))}, but should be {f16(int(wb[at]))} ({len(bad)} of {g.size} values differ)"
