"""r21: a block registered before every layer has filled it (mutants/s20, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r21",
    title="A block registered before every layer has filled it",
    symptom="a hit serves a block whose last layers were never written",
    caught_by=("TestPrefixMachine", "test_vector[prefix-registered-when-every-layer-is-full]"),
    # The layer just written decides, not the shortest of its group.
    notes="cargo test in ci/examples/rust kills it: the vectors (tests/vectors.rs, both modes); no unit test",
    edits=(
        Edit(
            C,
            'let full = shortest / bs;',
            'let full = seq.lens[layer] / bs;',
        ),
    ),
)
