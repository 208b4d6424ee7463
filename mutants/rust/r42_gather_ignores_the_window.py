"""r42: gather returns every position, not the window (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r42",
    title="gather returns every position, not the window",
    symptom="gather reads released entries (err internal here; a port that kept the data would return positions outside the window)",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # gather from position 0, as without the window.
    notes="cargo test in ci/examples/rust kills it: gather_returns_the_last_w_minus_1_positions_and_seq_len_all, blocks_before_the_window_are_released_and_read_as_minus_1; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            C,
            'let first = self.groups[g].kind.visible_from(len);',
            'let first = 0;',
        ),
    ),
)
