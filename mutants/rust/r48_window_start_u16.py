"""r48: the window's start m - W + 1 kept in a u16 when counting the released blocks."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r48",
    title="The window's start in a u16 (release)",
    symptom="B=1024, W=2, one append of 65,600 positions: the start 65,599 read as 63, nothing released, 65 blocks kept",
    caught_by=("test_vector[range-window-start-past-16-bits]",),
    notes="cargo test in ci/examples/rust: the range-window-start-past-16-bits vector (tests/vectors.rs)",
    edits=(Edit(W, "        self.start(min_len) / block_size\n", "        self.start(min_len) as u16 as usize / block_size\n"),),
)
