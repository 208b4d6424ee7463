"""r40: a hit needing ceil(W / B) blocks, not ceil((W - 1) / B) (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r40",
    title="A hit needing ceil(W / B) blocks, not ceil((W - 1) / B)",
    symptom="when B divides W - 1 a hit asks for one block more than the window reads, and serves less than it could",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The next token's own position counted in the window a hit must hold: Window::blocks_needed.
    notes="cargo test in ci/examples/rust kills it: a_hit_needs_ceil_w_minus_1_over_b_keys, window::tests::a_hit_needs_the_blocks_of_w_minus_1_positions; the window-* vectors (tests/vectors.rs, both modes); the gate first fails test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit",
    edits=(
        Edit(
            W,
            '(self.size - 1).div_ceil(block_size)',
            'self.size.div_ceil(block_size)',
        ),
    ),
)
