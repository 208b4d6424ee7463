"""r44: release before registration (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

# The registration at the end of append, as the mutant writes it after the release.
REGISTER = (
    "        if let Some(index) = &mut self.groups[g].index {\n"
    "            let full = shortest / bs;\n"
    "            register(index, &mut seq.nodes[g], &seq.tokens, &seq.tables[g], full, bs);\n"
    "        }\n"
)

MUTANT = Mutant(
    id="r44",
    title="Release before registration",
    symptom="a block that an append both fills and releases goes to the pool unregistered (here: registration meets a released entry, err internal)",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The release moves before the prefix registration at the end of append.
    notes="cargo test in ci/examples/rust kills it: released_registered_blocks_are_cached_highest_index_first, a_hit_takes_the_blocks_of_the_served_window_only; the window-* vectors (tests/vectors.rs, both modes); the gate first fails test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit",
    edits=(
        Edit(C, REGISTER.replace("self.groups[g]", "group"), ''),
        Edit(
            C,
            '        release_out_of_window(&mut seq.tables[g], released, &mut self.alloc, &self.groups);\n',
            '        release_out_of_window(&mut seq.tables[g], released, &mut self.alloc, &self.groups);\n' + REGISTER,
        ),
    ),
)
