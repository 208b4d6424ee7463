"""s46: a released registered block freed, not cached (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s46',
    title='A released registered block freed, not cached',
    symptom='with prefix caching, a block let go by the window loses its key instead of staying cached for the next prompt',
    caught_by=('test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit', 'TestWindowPrefixMachine'),
    edits=(
        Edit(
            'paged/groups.py',
            '        self._let_go(newly)\n',
            '        for block in newly:\n            self.alloc.decref(block, False)\n',
        ),
    ),
)
