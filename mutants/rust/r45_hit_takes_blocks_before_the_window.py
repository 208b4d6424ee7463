"""r45: a hit that takes the blocks before the window too (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r45",
    title="A hit that takes the blocks before the window too",
    symptom="a hit holds blocks no window reaches, or fails on an evicted key it does not need (err internal here)",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The hit's table holds every served block, none -1, whatever the window.
    notes="cargo test in ci/examples/rust kills it: a_hit_takes_the_blocks_of_the_served_window_only, a_hit_needs_ceil_w_minus_1_over_b_keys; the window-* vectors (tests/vectors.rs, both modes); the gate first fails test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit",
    edits=(
        Edit(
            C,
            '            if i < released {\n',
            '            if false {\n',
        ),
    ),
)
