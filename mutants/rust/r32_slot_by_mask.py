"""r32: a position's slot computed as `p & (B - 1)` instead of `p % B` (right only when B is a power of two)."""

from mutants import Edit, Mutant

F = "ci/examples/rust/src/pool.rs"

MUTANT = Mutant(
    id="r32",
    title="The slot as p & (B - 1)",
    symptom="with a block size that is not a power of two, positions of one block share a slot: gather returns overwritten values",
    caught_by=("test_vector[s04-k-into-v-slab]", "test_vector[random-1]"),  # B = 3; the catalog's B = 4 cannot see it
    # The mask a C or Rust programmer writes for speed, in `locate`, the one slot rule of both the write and the read:
    # B = 1, 2, 4, ... agree with `%`; B = 3 sends positions 0 and 1 to slot 0.
    notes="cargo test in ci/examples/rust kills it: a_layer_longer_than_u16 (B = 70,000), the vectors (tests/vectors.rs)",
    edits=(
        Edit(F, "(held(table, pos / block_size), pos % block_size)", "(held(table, pos / block_size), pos & (block_size - 1))"),
    ),
)
