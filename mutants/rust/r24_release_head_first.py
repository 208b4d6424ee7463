"""r24: release head first (mutants/s23, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r24",
    title="Release head first",
    symptom="a freed sequence's first blocks become the oldest cached, so its prefix is evicted before its tail",
    caught_by=("TestPrefixMachine", "test_vector[prefix-release-order-and-hits]"),
    # CONTRACT.md: free lets go of the table from its last entry to its first.
    notes="cargo test in ci/examples/rust kills it: the vectors (tests/vectors.rs, both modes); no unit test",
    edits=(
        Edit(
            C,
            'for &block in table.iter().rev().flatten() {',
            'for &block in table.iter().flatten() {',
        ),
    ),
)
