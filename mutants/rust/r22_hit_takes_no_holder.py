"""r22: a hit that takes no holder (mutants/s21, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r22",
    title="A hit that takes no holder",
    symptom="a served block can be evicted, or freed twice, while the sequence that was served it still reads it",
    caught_by=("TestPrefixMachine", "test_vector[prefix-hit-takes-a-holder]"),
    # A lock count not taken on a match. The served block stays cached (takeable) with no holder; the sequence's free
    # then releases a block with no holder, which the allocator refuses with a panic (err internal).
    notes="cargo test in ci/examples/rust kills it: the vectors (tests/vectors.rs, both modes); no unit test",
    edits=(
        Edit(
            C,
            '            self.alloc.acquire(block);\n',
            '',
        ),
    ),
)
