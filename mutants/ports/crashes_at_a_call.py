"""A deliberately broken implementation:
the reference cache whose stats() kills its process with SIGSEGV,
which every vector and test calls.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes shows the gate never passes it.
"""

from __future__ import annotations

import os
import signal

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, crashing at stats()."""

    def stats(self) -> dict[str, int]:
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("not reached: the call never returns")
