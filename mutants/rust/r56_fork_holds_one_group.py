"""r56: fork takes a holder on group 0's blocks only (CONTRACT.md, "Hybrid models"); s66 transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r56",
    title="A fork that holds one group's blocks",
    symptom="the child's tables of the other groups name blocks it holds no reference on: the parent's free gives them back to the pool while the child still reads them (here the allocator's counts go wrong: err internal)",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    notes="cargo test in ci/examples/rust kills it: fork_and_free_per_group_and_each_layer_gathers_its_own_window (tests/hybrid.rs); the vectors hybrid-fork-and-free-per-group and nine more hybrid-* (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "for &block in copy.tables.iter().flatten().flatten() {",
            "for &block in copy.tables.iter().take(1).flatten().flatten() {",
        ),
    ),
)
