"""r37: a released block never returned to the pool (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r37",
    title="A released block never returned to the pool",
    symptom="the table shows -1 but the block stays used: the pool runs dry under a window that should keep it bounded",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The entry becomes None, and the block is never let go of: counted as used forever.
    notes="cargo test in ci/examples/rust kills it: blocks_before_the_window_are_released_and_read_as_minus_1 and every window test that checks stats; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            C,
            '            let_go(alloc, groups, block);\n',
            '',
        ),
    ),
)
