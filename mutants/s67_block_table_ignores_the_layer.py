"""s67: block_table(s, layer) answers group 0's table whatever the layer (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s67',
    title="block_table ignores the layer",
    symptom="every layer names the full-attention group's table: a window group's -1 entries and its blocks are never "
    "seen (a driver that drops `block_table C S LAYER`'s LAYER answers the same)",
    caught_by=('vector hybrid-tables-on-one-pool', 'test_the_issue_example_holds_four_blocks_and_at_most_two'),
    edits=(
        Edit(
            'paged/cache.py',
            '        return np.array(self._group(li).tables[seq.sid], dtype=np.int32)',
            '        return np.array(self._groups[0].tables[seq.sid], dtype=np.int32)',
        ),
    ),
)
