"""r01: a write that ends exactly on a block boundary allocates one block too many."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r01",
    title="Allocating a block when a write ends exactly on a block boundary",
    symptom="one block per sequence wasted; tables longer than ceil(n / B)",
    caught_by=("test_hand_example_block_table",),
    # The last block index is computed from one past the chunk's end.
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, out_of_blocks_changes_nothing, the width tests, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "let (first, last) = (start / bs, (start + tokens - 1) / bs);",
            "let (first, last) = (start / bs, (start + tokens) / bs);",
        ),
    ),
)
