"""r29: eviction of the block cached most recently."""

from mutants import Edit, Mutant

A = "ci/examples/rust/src/allocator.rs"

MUTANT = Mutant(
    id="r29",
    title="Eviction of the block cached most recently",
    symptom="when no block is free, the prefix released last is evicted first: the most recently used prompts are recomputed",
    caught_by=("test_vector[prefix-hit-release-evict]",),
    # Only a port's API invites it: the eviction order is a BTreeMap by release time, and pop_last takes its newest
    # entry where pop_first takes the oldest.
    notes="cargo test in ci/examples/rust kills it: free_blocks_first_then_the_block_cached_longest_ago, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            A,
            'self.cached.pop_first()',
            'self.cached.pop_last()',
        ),
    ),
)
