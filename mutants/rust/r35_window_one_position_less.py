"""r35: the window one position too short (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r35",
    title="The window one position too short",
    symptom="gather leaves out the oldest position the next token attends to, and its block is released while it is still needed",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The window's start computed as len - W + 2 (W - 1 positions including the next token's own): Window::start.
    notes="cargo test in ci/examples/rust kills it: gather_returns_the_last_w_minus_1_positions_and_seq_len_all, blocks_before_the_window_are_released_and_read_as_minus_1, window::tests; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            W,
            'len.saturating_sub(self.size - 1)',
            'len.saturating_sub(self.size - 2)',
        ),
    ),
)
