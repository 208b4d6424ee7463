"""A broken port that talks its way out of its bug: its fork shares blocks without taking references
(pitfall s06), and when a test's call would show that, it raises pytest's XFailed instead (outside
pytest it gives the wrong answer). The gate must FAIL it: no --xfails list names the expected failure.
"""

from __future__ import annotations

import os

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose fork of a sequence holding blocks gives up under pytest."""

    def fork(self, parent: int, child: int) -> None:
        if os.environ.get("PYTEST_CURRENT_TEST") and self.block_table(parent).size:
            from _pytest.outcomes import XFailed

            raise XFailed("fork of a sequence holding blocks: not done yet")
        super().fork(parent, child)
