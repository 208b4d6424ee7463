"""A deliberately broken implementation: the sliding window taken as a keyword and ignored.

The reference cache with every block kept and every position gathered whatever `sliding_window`
says: the explorer, walking the windowed geometries, fails it in 2 calls (an append of B + 1
positions, then its gather); without the window it is `paged`.
meta_tests/explorer/test_explorer.py::test_a_window_the_port_ignores_is_found shows it refused.
"""

from __future__ import annotations

from typing import Any

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, built without the window it was given."""

    def __init__(self, *sizes: Any, prefix_caching: bool = False, sliding_window: Any = None) -> None:
        super().__init__(*sizes, prefix_caching=prefix_caching)
