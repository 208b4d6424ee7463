"""r04: append writes the K chunk into the V pool as well."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r04",
    title="Writing K into the V slab",
    symptom="attention mixes the wrong values",
    caught_by=("test_gather_matches_contiguous_float16",),
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, layers_keep_their_own_lengths, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/pool.rs",
            "copy_from_slice(&v.data[src..src + d])",
            "copy_from_slice(&k.data[src..src + d])",
        ),
    ),
)
