"""r25: a hit on a cached block that leaves it in the eviction order (mutants/s24, transposed)."""

from mutants import Edit, Mutant

A = "ci/examples/rust/src/allocator.rs"

MUTANT = Mutant(
    id="r25",
    title="A hit on a cached block that leaves it in the eviction order",
    symptom="a block in use is counted as cached, and can be evicted from under its holder",
    caught_by=("TestPrefixMachine", "test_vector[prefix-release-order-and-hits]"),
    # The hit forgets when the block became cached but leaves it queued; an eviction then takes a block with a holder,
    # which the allocator refuses with a panic (err internal), and the counts are wrong before that.
    notes="cargo test in ci/examples/rust kills it: free_blocks_first_then_the_block_cached_longest_ago, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            A,
            '            self.cached.remove(&since);\n',
            '            let _ = since;\n',
        ),
    ),
)
