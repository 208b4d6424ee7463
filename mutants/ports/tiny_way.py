"""A deliberately broken implementation that fails one way or another, as TINY_WAY says.

TINY_WAY=free: one free block too many reported; TINY_WAY=table: every table entry one too high.
meta_tests/test_xfails.py lists the first way as an expected failure: that way is recorded as
expected, the other fails with both texts.
"""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, wrong the way TINY_WAY names."""

    def num_free_blocks(self) -> int:
        return super().num_free_blocks() + (os.environ["TINY_WAY"] == "free")

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        return (super().block_table(seq_id, layer) + (os.environ["TINY_WAY"] == "table")).astype(np.int32)
