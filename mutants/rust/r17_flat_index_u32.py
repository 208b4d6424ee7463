"""r17: the flat position index block * B + slot is computed in u32."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r17",
    title="The flat position index (block * B + slot) in a u32",
    symptom="in a pool of more than 2^32 positions, rows past 2^32 wrap onto the pool's first blocks",
    caught_by=("test_vector[range-flat-index-past-32-bits]",),
    # Wraps in a release build (no overflow checks); a debug build panics instead.
    notes="cargo test in ci/examples/rust kills it: flat_position_index_past_u32",
    edits=(
        Edit(
            "ci/examples/rust/src/pool.rs",
            "        block as usize * self.block_size + slot\n",
            "        (block * self.block_size as u32 + slot as u32) as usize\n",
        ),
    ),
)
