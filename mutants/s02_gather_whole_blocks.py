"""s02: gather copies whole blocks, so the partial last block brings back slots never written."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s02",
    title="Gathering whole blocks",
    symptom="the partial last block returns stale positions",
    caught_by=("test_hand_example_block_table",),
    # gather's length is rounded up to a whole number of blocks.
    edits=(
        Edit(
            'paged/cache.py',
            '        length = seq.lens[li]\n        group = self._group(li)',
            '        length = -(-seq.lens[li] // self.block_size) * self.block_size\n        group = self._group(li)',
        ),
    ),
)
