"""r30: a pruned prefix node's slot is reused with its old generation, so a stale reference reads as live."""

from mutants import Edit, Mutant

P = "ci/examples/rust/src/prefix.rs"

MUTANT = Mutant(
    id="r30",
    title="A pruned node's slot reused under its old generation",
    symptom="a sequence whose prefix nodes were pruned registers its next block under a node that is no longer its prefix",
    caught_by=("test_vector[prefix-key-evicted-under-a-live-sequence]",),
    # Only an arena port has it: the nodes live in a Vec and refer to each other by slot; a sequence keeps (slot,
    # generation) of its full blocks' nodes. Without the generation moving on at a prune, `is_dead` never says so,
    # and the sequence hangs its next key below a detached node (never found again) or below whichever prefix took
    # the slot since.
    notes="cargo test in ci/examples/rust kills it: drop_prunes_what_leads_nowhere_and_old_references_die, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            P,
            "            node.generation += 1; // every NodeRef to it is dead now\n",
            "",
        ),
    ),
)
