"""s07: append writes into a shared block in place (no copy on write)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s07",
    title="Writing into a shared block in place",
    symptom="the parent sees the child's tokens",
    caught_by=("test_fork_shares_until_a_write", "test_paged_matches_contiguous_decoding"),
    # No block the chunk touches is ever considered shared, so none is copied.
    edits=(
        Edit(
            "paged/cache.py",
            "        shared = alloc.shared(table, first, last + 1)",
            "        shared: list[int] = []",
        ),
    ),
)
