"""A broken port that narrows the suite from inside: its `with` block never closes the cache, and on
import it writes PYTEST_ADDOPTS to deselect the one test that sees that (test_with_closes_on_exit_even_on_error),
and HYPOTHESIS_PROFILE.
The gate once handed its environment to the suite's pytest run and gave it a full PASS, with "2 deselected"
instead of 1 as the only trace. The gate must FAIL it: no variable a module sets reaches a pytest run.
"""

from __future__ import annotations

import os

import paged
from paged import OutOfBlocks

__all__ = ["OutOfBlocks", "PagedKVCache"]

os.environ["PYTEST_ADDOPTS"] = "-k 'not test_with_closes_on_exit_even_on_error'"
os.environ["HYPOTHESIS_PROFILE"] = "dev"  # random examples, not the gate's fixed ones (tests/plugins/hypothesis_profiles.py)


class PagedKVCache(paged.PagedKVCache):
    """The reference cache, whose `with` block leaves it open."""

    def __exit__(self, *exc: object) -> None:
        return None
