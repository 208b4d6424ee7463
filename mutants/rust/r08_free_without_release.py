"""r08: free drops the sequence's table but releases none of its blocks."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r08",
    title="Freeing the table without releasing blocks",
    symptom="blocks leak on every request",
    caught_by=("test_free_restores_the_pool",),
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example (its final frees)",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "                let_go(&mut self.alloc, &self.groups, block);\n",
            "",
        ),
    ),
)
