"""A deliberately broken implementation:
the reference cache whose stats() never returns,
which every vector and test calls.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes shows the gate never passes it.
"""

from __future__ import annotations

import time

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, hanging at stats()."""

    def stats(self) -> dict[str, int]:
        time.sleep(600)
        raise AssertionError("not reached: the call never returns")
