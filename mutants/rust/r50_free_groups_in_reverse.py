"""r50: free lets go of the groups' tables last group first (CONTRACT.md, "Hybrid models"); s60 transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r50",
    title="Groups freed in reverse order",
    symptom="a free makes the last group's blocks cached first, so pool pressure evicts another group's blocks than freeing=by-group says (vLLM #48489 / PR #48532)",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    # free walks the groups' tables from the last group to the first (each still tail first).
    notes="cargo test in ci/examples/rust kills it: free_lets_go_group_by_group_and_pressure_evicts_in_that_order (tests/hybrid.rs); the vectors hybrid-eviction-order-across-groups, hybrid-fork-and-free-per-group, hybrid-random-1, hybrid-random-2 (tests/vectors.rs, both modes)",
    edits=(Edit(C, "        for table in &seq.tables {\n", "        for table in seq.tables.iter().rev() {\n"),),
)
