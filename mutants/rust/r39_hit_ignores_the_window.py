"""r39: a prefix hit that ignores the window (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/groups.rs"

MUTANT = Mutant(
    id="r39",
    title="A prefix hit that ignores the window",
    symptom="a prompt whose early blocks were evicted is served only the run from block 0, though the window needs none of them",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # A window group's hit is the longest run of registered keys from the first block, as full attention's.
    notes="cargo test in ci/examples/rust kills it: a_hit_takes_the_blocks_of_the_served_window_only, a_hit_needs_ceil_w_minus_1_over_b_keys; the window-* vectors (tests/vectors.rs, both modes); the gate first fails test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit",
    edits=(
        Edit(
            C,
            'self.blocks_served(registered, block_size)',
            'registered.iter().take_while(|&&r| r).count()',
        ),
    ),
)
