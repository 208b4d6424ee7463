"""r43: release lowest index first (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r43",
    title="Release lowest index first",
    symptom="released registered blocks become cached head first, so the older prefix is evicted last, not first",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # CONTRACT.md: the release lets go from the highest table index to the lowest, the order of free.
    notes="cargo test in ci/examples/rust kills it: released_registered_blocks_are_cached_highest_index_first; the window-* vectors (tests/vectors.rs, both modes); the gate first fails TestWindowPrefixMachine",
    edits=(
        Edit(
            C,
            '.iter_mut().rev() {',
            '.iter_mut() {',
        ),
    ),
)
