"""A deliberately broken implementation:
the reference cache whose stats() ends the process with sys.exit(0),
which every vector and test calls.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes shows the gate never passes it.
"""

from __future__ import annotations

import sys

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, ending the process at stats()."""

    def stats(self) -> dict[str, int]:
        sys.exit(0)
