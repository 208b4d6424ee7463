"""A broken port that skips what it cannot do: an append of any NaN raises unittest.SkipTest (as a
port that cannot keep NaN payloads might). The gate must FAIL it: a skip whose reason is not one of
the suite's own is a failure, however the port raised it.
"""

from __future__ import annotations

import unittest
from typing import Any

import numpy as np

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, which refuses NaN input by skipping the test that sent it."""

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        if has_nan(k) or has_nan(v):
            raise unittest.SkipTest("NaN input is not supported by this port")
        super().append(seq_id, layer, k, v)


def has_nan(x: Any) -> bool:
    a = np.asarray(x) if isinstance(x, np.ndarray) else None
    return a is not None and a.dtype.kind == "f" and bool(np.isnan(a).any())
