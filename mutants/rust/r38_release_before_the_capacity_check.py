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
            '        release_out_of_window(&mut seq.tables[g], released, &mut self.alloc, &self.groups);\n        Ok(())\n',
            '        Ok(())\n',
        ),
        Edit(
            C,
            '        // Capacity, up front:',
            '        let shortest = self.groups[g].layers.iter().map(|&l| seq.lens[l]).min().unwrap();\n'
            '        let early = self.groups[g].kind.released_before(shortest, bs);\n'
            '        release_out_of_window(table, early, &mut self.alloc, &self.groups);\n'
            '        // Capacity, up front:',
        ),
    ),
)
