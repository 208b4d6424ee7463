"""s36: append's write of a chunk within one block starts at slot 0 of the block instead of at seq_len % B."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s36",
    title="A chunk within one block written from its first slot",
    symptom="a decode step's token overwrites the block's first slot; the slots after it keep what was there",
    caught_by=("test_hand_example_block_table",),
    # append writes a chunk that stays within one block itself (every decode step), one slice of each
    # pool; chunks over several blocks go through `segments`, so s05 leaves this path alone.
    edits=(Edit("paged/cache.py", "            lo = start - first * bs\n", "            lo = 0\n"),),
)
