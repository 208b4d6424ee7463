"""r38: release at the start of the append, before the capacity check (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r38",
    title="Release at the start of the append, before the capacity check",
    symptom="after an append its out-of-window blocks are still held (released one append late), and an append refused OutOfBlocks has released blocks",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # vLLM 0.33.0's SlidingWindowManager order (CONTRACT.md's note): the release moves from the end of append to
    # before the capacity check, from the lengths before the write.
    notes="cargo test in ci/examples/rust kills it: blocks_before_the_window_are_released_and_read_as_minus_1, what_an_append_releases_comes_back_too_late_for_it, a_sliding_window_transcript; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            C,
            '        release_out_of_window(seq, self.window, bs, &mut self.alloc, &self.prefix);\n        Ok(())\n',
            '        Ok(())\n',
        ),
        Edit(
            C,
            '        // Capacity, up front:',
            '        release_out_of_window(seq, self.window, bs, &mut self.alloc, &self.prefix);\n        // Capacity, up front:',
        ),
    ),
)
