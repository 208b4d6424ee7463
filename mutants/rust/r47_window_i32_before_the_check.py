"""r47: the sliding window W read into an i32 before its range check."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r47",
    title="The sliding window in an i32, narrowed before the check",
    symptom="W = 2^32 + 2 wraps to 2 and is accepted: a window the contract refuses",
    caught_by=("test_vector[range-window-past-16-bits]",),
    notes="cargo test in ci/examples/rust: the range-window-past-16-bits vector (tests/vectors.rs)",
    edits=(
        Edit(
            W,
            "    pub fn new(size: i64) -> Result<Window, CacheError> {\n",
            "    pub fn new(size: i64) -> Result<Window, CacheError> {\n        let size = size as i32 as i64;\n",
        ),
    ),
)
