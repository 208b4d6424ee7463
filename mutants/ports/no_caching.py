"""A deliberately broken implementation: prefix caching dropped whatever it is asked.

Issue 52's held-out adapter's bug (vllm_window_without_caching.py) on our cache: it takes
`prefix_caching=True` and serves no hit. ci/engines must not narrow a gate on it:
meta_tests/test_narrowing.py shows its behaviour differs from its base's.
"""

from __future__ import annotations

from typing import Any

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, built without prefix caching."""

    def __init__(self, *sizes: Any, prefix_caching: bool = False, **kwargs: Any) -> None:
        super().__init__(*sizes, prefix_caching=False, **kwargs)
