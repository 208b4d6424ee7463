"""r55: every group looks its hit up in group 0's keys: a key of one group serves another (CONTRACT.md, "Hybrid
models"); s65 transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r55",
    title="Keys shared across groups",
    symptom="a block registered in one group serves a hit in another: a window group's table takes the full-attention group's blocks (vLLM keys a cached block by its hash and its group id, BlockHashWithGroupId, so that it cannot)",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    # add_seq walks group 0's tree of keys for every group (the port keeps one index per group, so sharing them
    # is this lookup).
    notes="cargo test in ci/examples/rust kills it: a_hit_is_what_every_group_can_serve, the_hit_is_the_fixed_point_of_the_groups_hits, the_hits_measured_on_vllm (tests/hybrid.rs); the vectors hybrid-keys-per-group, hybrid-hit-at-the-fixed-point and four more hybrid-* (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "self.groups.iter().map(|group| index(group).walk(&ids)).collect();",
            "self.groups.iter().map(|_| index(&self.groups[0]).walk(&ids)).collect();",
        ),
    ),
)
