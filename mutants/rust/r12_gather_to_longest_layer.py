"""r12: gather returns every layer at the length of the sequence's longest layer."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r12",
    title="Gathering every layer to the longest layer's length",
    symptom="a layer that has not been written yet returns positions it never stored",
    caught_by=("test_layers_keep_independent_lengths",),
    notes="cargo test in ci/examples/rust kills it: layers_keep_their_own_lengths",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        let len = seq.lens[layer];\n        let first =",
            "        let len = *seq.lens.iter().max().unwrap();\n        let first =",
        ),
    ),
)
