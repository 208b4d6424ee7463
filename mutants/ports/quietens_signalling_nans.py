"""Broken on purpose (issue 35, e): signalling NaNs are quietened on write (0x7c01 -> 0x7e01).

Everything else is the real `paged` cache. A float16 NaN whose quiet bit (bit 9) is clear gets it
set, as a conversion through float32 does on some hardware: the payload's other bits and the sign
stay. The contract keeps float16 bit for bit, NaN payloads included; the suite sent only NumPy's
own NaN (0x7e00, already quiet), so it passed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


def quietened(values: Any) -> Any:
    """A float16 array's signalling NaNs with their quiet bit set; anything else as it is."""
    if not isinstance(values, np.ndarray) or values.dtype != np.float16:
        return values
    bits = values.view(np.uint16)
    signalling = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0) & ((bits & 0x0200) == 0)
    return np.where(signalling, bits | 0x0200, bits).astype(np.uint16).view(np.float16)


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose writes quieten signalling NaNs."""

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        super().append(seq_id, layer, quietened(k), quietened(v))
