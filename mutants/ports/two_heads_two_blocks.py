"""A broken port whose bug shows only on a pool of 2 blocks with 2 heads: there it writes K where V
goes and V where K goes. No conformance vector makes such a cache; the explorer's N2-B2-L1-H2-D2
geometry does, within 2 calls. meta_tests/test_verdict.py gates it with a harmless option after `--`:
the vectors pass, and the explorer step still runs, and fails.
"""

from __future__ import annotations

from typing import Any

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, with K and V swapped on a 2-block, 2-head pool."""

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        swapped = self.num_blocks == 2 and self.n_kv_heads == 2
        super().append(seq_id, layer, *((v, k) if swapped else (k, v)))
