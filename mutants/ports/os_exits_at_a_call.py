"""A deliberately broken implementation:
the reference cache whose stats() ends the process with os._exit(0),
which every vector and test calls.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes
and test_a_suite_that_ends_without_its_record_never_passes show the gate never passes it.
"""

from __future__ import annotations

import os

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, ending the process at stats()."""

    def stats(self) -> dict[str, int]:
        os._exit(0)
