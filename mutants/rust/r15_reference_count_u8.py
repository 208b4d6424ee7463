"""r15: reference counts are u8, so the 256th holder of a block wraps its count to 0."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r15",
    title="A reference count in a u8",
    symptom="with 256 holders a block's count wraps: the next release frees a block live sequences still read",
    caught_by=("test_vector[range-reference-count-past-16-bits]",),
    # `+= 1` wraps in a release build (no overflow checks); a debug build panics instead.
    notes="cargo test in ci/examples/rust kills it: reference_counts_past_u8",
    edits=(Edit("ci/examples/rust/src/allocator.rs", "    refs: Vec<u32>,\n", "    refs: Vec<u8>,\n"),),
)
