"""s22: eviction that leaves the key behind."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s22',
    title='Eviction that leaves the key behind',
    symptom='a later hit reads a block that was reused for other tokens',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-evicted-key-is-gone]'),
    # The allocator takes the oldest cached block without telling the index, so its key still names it.
    edits=(
        Edit(
            'paged/allocator.py',
            '                self._on_evict(block)\n',
            '                pass\n',
        ),
    ),
)
