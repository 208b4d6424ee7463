"""r26: a cached block counted as free in stats (mutants/s25, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r26",
    title="A cached block counted as free in stats",
    symptom="stats() says free + used + cached > N, and free counts blocks that keep a key",
    caught_by=("TestPrefixMachine", "test_vector[prefix-hit-release-evict]"),
    # CONTRACT.md: free is no holder and no key; cached is no holder and a key.
    notes="cargo test in ci/examples/rust kills it: prefix_caching_registers_full_blocks_and_serves_them, the_prefix_caching_transcript_of_protocol_md, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            'free: takeable - cached,',
            'free: takeable,',
        ),
    ),
)
