"""r34: the window one position too long (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r34",
    title="The window one position too long",
    symptom="gather returns W positions, not W - 1, and every block is released one position late",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The window's start computed as len - W (the token's own position counted twice): Window::start, so both
    # gather and the release follow it.
    notes="cargo test in ci/examples/rust kills it: a_hit_takes_the_blocks_of_the_served_window_only, gather_returns_the_last_w_minus_1_positions_and_seq_len_all, window::tests; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin (test_paged_matches_contiguous_decoding_with_a_sliding_window)",
    edits=(
        Edit(
            W,
            'len.saturating_sub(self.size - 1)',
            'len.saturating_sub(self.size)',
        ),
    ),
)
