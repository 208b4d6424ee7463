"""r51: a hit sized by group 0 alone (CONTRACT.md, "Hybrid models"); s61 transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/groups.rs"

MUTANT = Mutant(
    id="r51",
    title="The hit of one group only",
    symptom="add_seq serves what group 0 can serve though another group has fewer of the blocks its layers need (here: the other group's table meets a key it lacks, err internal)",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    # common_hit asks group 0 only.
    notes="cargo test in ci/examples/rust kills it: a_hit_is_what_every_group_can_serve, the_hit_is_the_fixed_point_of_the_groups_hits (tests/hybrid.rs); the vectors hybrid-hit-at-the-fixed-point, hybrid-keys-per-group, hybrid-fork-and-free-per-group, hybrid-random-1 (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "        for (group, path) in groups.iter().zip(paths) {\n",
            "        for (group, path) in groups.iter().zip(paths).take(1) {\n",
        ),
    ),
)
