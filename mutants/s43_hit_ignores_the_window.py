"""s43: a hit that ignores the window (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s43',
    title='A hit that ignores the window',
    symptom='add_seq serves only a run of registered keys from the first block, so a prompt whose first blocks were evicted is recomputed whole',
    caught_by=('test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit', 'TestWindowPrefixMachine'),
    edits=(
        Edit('paged/groups.py', '        self.need = -(-(window - 1) // block_size)', '        self.need = None'),
    ),
)
