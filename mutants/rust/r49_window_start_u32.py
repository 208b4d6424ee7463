"""r49: the window's start m - W + 1 computed in a u32 before max(0, ...) when counting the released blocks."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r49",
    title="The window's start in a u32, wrapping below 0 (release)",
    symptom="while m < W - 1 the start wraps to about 2^32: the release slices past the table and the driver panics",
    caught_by=("test_vector[range-window-past-16-bits]", "window"),
    notes="cargo test in ci/examples/rust kills it: a_block_is_released_once_wholly_before_the_window; every window-* vector",
    edits=(
        Edit(
            W,
            "        self.start(min_len) / block_size\n",
            "        (min_len as u32).wrapping_sub(self.size as u32 - 1) as usize / block_size\n",
        ),
    ),
)
