"""s05: a chunk is written from slot 0 of its first block instead of from slot seq_len % B."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s05",
    title="A chunk ignoring its starting slot",
    symptom="the write runs past the block's slab",
    caught_by=("test_gather_matches_contiguous_float16",),
    # `segments` maps positions to (block, slots); with the starting slot taken as 0, a chunk
    # that starts mid-block overwrites the block's first slots and its tail lands a block early.
    # gather always starts at position 0, so only writes change.
    edits=(Edit("paged/cache.py", "    slot = start % block_size\n", "    slot = 0\n"),),
)
