"""r52: an append's capacity checked against its group's share of the pool (CONTRACT.md, "Hybrid models"); s62
transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r52",
    title="A capacity check per group instead of one over the shared pool",
    symptom="an append is refused while the one pool has the blocks it needs: each group counts only an equal share of the free blocks",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    notes="cargo test in ci/examples/rust kills it: the_issue_example_holds_four_blocks_and_at_most_two and two more of tests/hybrid.rs; the vectors hybrid-capacity-one-check, hybrid-the-issue-example and seven more hybrid-* (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "        if needed > self.alloc.num_free() {\n",
            "        if needed > self.alloc.num_free() / self.groups.len() {\n",
        ),
    ),
)
