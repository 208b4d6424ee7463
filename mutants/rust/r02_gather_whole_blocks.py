"""r02: gather copies whole blocks, so the partial last block brings back slots never written."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r02",
    title="Gathering whole blocks",
    symptom="the partial last block returns stale positions",
    caught_by=("test_hand_example_block_table",),
    # gather's length is rounded up to a whole number of blocks.
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, layers_keep_their_own_lengths, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        let len = seq.lens[layer];\n        let first =",
            "        let len = seq.lens[layer].div_ceil(self.pool.block_size) * self.pool.block_size;\n"
            "        let first =",
        ),
    ),
)
