"""r31: the port's append checks the layer and the shapes before the sequence id (s31 transposed)."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r31",
    title="The layer and shapes checked before the sequence id",
    symptom="an append to an id that is not live with a bad layer or shape answers invalid_argument, not unknown_sequence",
    caught_by=("test_vector[error-precedence]",),
    # CONTRACT.md "Which error wins": the id before the other arguments; every single-fault request still gets its kind.
    notes="cargo test in ci/examples/rust kills it: errors_come_in_the_references_order, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        self.live(seq_id)?;\n        let layer = self.layer(layer)?;\n        let tokens = self.chunk_tokens(k, v)?;\n",
            "        let layer = self.layer(layer)?;\n        let tokens = self.chunk_tokens(k, v)?;\n        self.live(seq_id)?;\n",
        ),
    ),
)
