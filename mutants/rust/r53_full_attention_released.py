"""r53: in a hybrid model, the full-attention group released as if it had the largest window (CONTRACT.md,
"Hybrid models"); s63 transposed."""

from mutants import Edit, Mutant

G = "ci/examples/rust/src/groups.rs"

MUTANT = Mutant(
    id="r53",
    title="A release in the full-attention group",
    symptom="the full-attention layers' early blocks go back to the pool: their gathers lose positions, their tables get -1 entries",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    # make_groups gives a full-attention group the kind of the largest window among the layers, when there is one.
    notes="cargo test in ci/examples/rust kills it: the_issue_example_holds_four_blocks_and_at_most_two and three more of tests/hybrid.rs, wire's a_hybrid_transcript; sixteen hybrid-* vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            G,
            "                None => Box::new(FullAttention),\n",
            "                None => match windows.iter().flatten().max_by_key(|w| w.size()) {\n"
            "                    Some(&largest) => Box::new(largest),\n"
            "                    None => Box::new(FullAttention),\n"
            "                },\n",
        ),
    ),
)
