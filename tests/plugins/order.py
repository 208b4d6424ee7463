"""The run order: the cheap, broad tests first (the seed's catalog, the vectors), the long ones last (the
catalog's 10^4-operation run, the machines, the tests that run a whole gate), so a run that stops at its
first failure (-x: the mutant runners, mutmut, the gate's first pass) reaches its verdict early."""

from __future__ import annotations

import pytest

# test_hybrid.py's hand tests (a fraction of a second; its machines are stateful, so last) kill the hybrid
# mutants (s60..s64) that the catalog's hybrid twin does not. test_engines.py runs only when an engine adapter
# is gated (else one skip for the module), and most engine mutants that outlive the vectors die there.
# The page tables' and the decode's tests (a fraction of a second each) come before the widths' vectors, which take
# seconds: the mutants of the exports and of the decode die there.
ORDER = (
    "test_catalog.py", "test_hybrid.py", "test_vectors.py", "test_engines.py", "test_errors.py", "test_allocation.py",
    "test_fork.py", "test_data.py", "test_page_tables.py", "test_attention.py", "test_widths.py",
)
# In a file, these come after its other tests: test_engines.py's random sessions (25 to 40 seeds an adapter) after
# its scripted tests, each of which pins one engine behaviour in a fraction of a second; test_widths.py's vectors
# that write past 2^32 positions (seconds each) after the others (hundredths).
LATER_IN_FILE = ("matches_the_oracle", "flat-index")
LONG = ("test_random_ops_conserve_blocks",)
LAST = ("test_gate.py", "test_verdict.py")  # each runs a whole gate in a subprocess: minutes where a direct test takes seconds
# Before all of them, the constructor's argument order, which builds no cache: a bug that lets
# 2^31 blocks through (say mutmut's `name == "XXnum_blocksXX"` in as_sizes) fails there at once,
# where the vector that asks for 2^31 blocks would build an allocator of 2^31 ids and exhaust
# the machine (mutmut saw a segfault or a timeout, by the order its test set came in).
FIRST = ("test_which_constructor_error_wins",)


def run_rank(item: pytest.Item) -> tuple[bool, bool, int, bool]:
    long = item.get_closest_marker("stateful") is not None or item.name in LONG or item.path.name in LAST
    first = getattr(item, "originalname", item.name) in FIRST
    later = any(part in item.name for part in LATER_IN_FILE)
    return long, not first, ORDER.index(item.path.name) if item.path.name in ORDER else len(ORDER), later


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=run_rank)
