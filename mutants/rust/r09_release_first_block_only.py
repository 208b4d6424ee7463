"""r09: free releases the first block of the table and leaks the rest."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r09",
    title="Releasing only the first block",
    symptom="leaks all but one block per request",
    caught_by=("test_free_restores_the_pool",),
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example (its final frees)",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "for &block in table.iter().rev().flatten() {",
            "for &block in table.iter().take(1).rev().flatten() {",
        ),
    ),
)
