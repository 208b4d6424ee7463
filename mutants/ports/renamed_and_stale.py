"""A deliberately broken implementation: block ids renamed (legal under allocation=any) and stale state.

The ids of renamed_ids.py (b -> N-1-b) and the bug of stale_freed_id.py in its bluntest form: every
append to an id freed once swaps K and V. Under allocation=any the ids are right, so the replay of its
failure must blame the gather, never the allocation order (issue 29):
meta_tests/explorer/test_explorer.py::test_the_replay_under_allocation_any_blames_the_data_not_the_ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, renamed, whose appends to a freed id swap K and V."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.freed: set[int] = set()

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        return (self.num_blocks - 1 - super().block_table(seq_id, layer)).astype(np.int32)

    def free(self, seq_id: int) -> None:
        super().free(seq_id)
        self.freed.add(seq_id)

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        if seq_id in self.freed:
            k, v = v, k
        super().append(seq_id, layer, k, v)
