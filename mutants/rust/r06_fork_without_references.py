"""r06: fork copies the parent's table but takes no reference on the blocks it now shares."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r06",
    title="Forking without taking a reference on each shared block",
    symptom="the parent's free returns blocks the child still reads",
    caught_by=("test_fork_shares_until_a_write", "test_random_ops_conserve_blocks"),
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, reference_counts_past_u8, wire's worked transcript",
    edits=(Edit("ci/examples/rust/src/cache.rs", "            self.alloc.incref(block);\n", ""),),
)
