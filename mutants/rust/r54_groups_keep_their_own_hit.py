"""r54: the groups' hits cut once to the shortest, not to the fixed point (CONTRACT.md, "Hybrid models"); s64
transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/groups.rs"

MUTANT = Mutant(
    id="r54",
    title="A hit not aligned across groups (no fixed point)",
    symptom="each group gives its own longest hit once and the shortest is served: a window group is then served a k it cannot serve (its window's keys at k missing; here err internal)",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    # common_hit returns after one pass: the smallest of the groups' own hits, never asked again at that k.
    notes="cargo test in ci/examples/rust kills it: the_hit_is_the_fixed_point_of_the_groups_hits (tests/hybrid.rs); the vector hybrid-fork-and-free-per-group (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "        if common == k {\n            return k;\n        }\n        k = common;\n",
            "        return common;\n",
        ),
    ),
)
