"""r07: append writes into a shared block in place (no copy on write)."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r07",
    title="Writing into a shared block in place",
    symptom="the parent sees the child's tokens",
    caught_by=("test_fork_shares_until_a_write", "test_paged_matches_contiguous_decoding"),
    # No block the chunk touches is ever considered shared, so none is copied.
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            ".filter(|&i| self.alloc.is_shared(held(table, i)))",
            ".filter(|_| false)",
        ),
    ),
)
