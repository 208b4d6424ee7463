"""s36: append's write of a chunk within one block starts at slot 0 of the block instead of at seq_len % B."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s36",
    title="A chunk within one block written from its first slot",
    symptom="a decode step's token overwrites the block's first slot; the slots after it keep what was there",
    caught_by=("test_hand_example_block_table",),
    # The fast path (paged/fast.py) writes a chunk that stays within one block (every decode step but
    # the first of each block), one slice of each pool; the general path goes through `segments`, so
    # s05 leaves this path alone.
    edits=(Edit("paged/fast.py", "        first, lo = divmod(start, self.block_size)\n", "        first, lo = start // self.block_size, 0\n"),),
)
