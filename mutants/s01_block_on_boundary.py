"""s01: a write that ends exactly on a block boundary allocates one block too many."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s01",
    title="Allocating a block when a write ends exactly on a block boundary",
    symptom="one block per sequence wasted; tables longer than ceil(n / B)",
    caught_by=("test_hand_example_block_table",),
    # The last block index the chunk touches is computed from one past its end, so a chunk
    # that fills its last block to the brim asks for the next one too.
    edits=(
        Edit(
            "paged/cache.py",
            "first, last = start // bs, (start + tokens - 1) // bs",
            "first, last = start // bs, (start + tokens) // bs",
        ),
    ),
)
