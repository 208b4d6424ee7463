"""r46: the sliding window W kept in a u16 (after its range check)."""

from mutants import Edit, Mutant

W = "ci/examples/rust/src/window.rs"

MUTANT = Mutant(
    id="r46",
    title="The sliding window in a u16",
    symptom="W = 65,538 acts as W = 2: three positions leave the table -1, -1, 2 and gather one position",
    caught_by=("test_vector[range-window-past-16-bits]",),
    notes="cargo test in ci/examples/rust kills it: sizes_from_2_to_2_pow_31_minus_1; the range-window-* vectors (tests/vectors.rs)",
    edits=(Edit(W, "        Ok(Window { size: size as usize })\n", "        Ok(Window { size: size as u16 as usize })\n"),),
)
