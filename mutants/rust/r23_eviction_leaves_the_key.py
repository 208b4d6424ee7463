"""r23: eviction that leaves the key behind (mutants/s22, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r23",
    title="Eviction that leaves the key behind",
    symptom="a later hit reads a block that was reused for other tokens",
    caught_by=("TestPrefixMachine", "test_vector[prefix-evicted-key-is-gone]"),
    # The allocator takes the oldest cached block and the cache does not tell the index, so its key still names it.
    notes="cargo test in ci/examples/rust kills it: the vectors (tests/vectors.rs, both modes); no unit test",
    edits=(
        Edit(
            C,
            '        index.expect("only a registered block is cached").drop(block);\n',
            '',
        ),
    ),
)
