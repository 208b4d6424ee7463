"""r41: a released entry that keeps its block id (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r41",
    title="A released entry that keeps its block id",
    symptom="the block is let go of but still in the table: block_table shows it, and the next release or free lets go of it again",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The Rust form of "free decrefs a -1 entry": the entry is read (`*entry`), not taken (`entry.take()`), so it
    # stays Some; the allocator panics at the second release of a block with no holder (err internal).
    notes="cargo test in ci/examples/rust kills it: blocks_before_the_window_are_released_and_read_as_minus_1, every window test; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            C,
            'if let Some(block) = entry.take() {',
            'if let Some(block) = *entry {',
        ),
    ),
)
