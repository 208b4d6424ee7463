"""A deliberately broken implementation under the default profile: block ids renamed b -> N-1-b.

The reference cache seen through a renaming of its block ids, as a port with another allocation
order: legal under `allocation=any`, which it does not declare, so the default profile's
lowest-free order refuses it on the first table. meta_tests/explorer/test_explorer.py::
test_allocation_any_compares_tables_up_to_a_renaming shows it refused, and passed under allocation=any.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, reporting block b as N-1-b."""

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        return (self.num_blocks - 1 - super().block_table(seq_id, layer)).astype(np.int32)
