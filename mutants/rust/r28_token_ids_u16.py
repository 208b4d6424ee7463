"""r28: token ids stored as u16."""

from mutants import Edit, Mutant

P = "ci/examples/rust/src/prefix.rs"

MUTANT = Mutant(
    id="r28",
    title="Token ids stored as u16",
    symptom="token ids that agree in their low 16 bits are one token: a prompt is served blocks another prompt wrote",
    caught_by=("test_vector[prefix-token-ids-past-16-bits]",),
    # Only a port narrows: the wire's i64 token ids are cast with `as` into a u16 key, as a port sized for a
    # 32k vocabulary would (Llama 3's has 128,256 tokens).
    notes="cargo test in ci/examples/rust kills it: token_ids_past_u16, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            P,
            'pub type TokenId = u64;',
            'pub type TokenId = u16;',
        ),
    ),
)
