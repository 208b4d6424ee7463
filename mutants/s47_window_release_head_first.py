"""s47: blocks released by the window head first (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s47',
    title='Blocks released by the window head first',
    symptom='when one append releases several registered blocks, they become cached lowest index first, so eviction takes the wrong one first',
    caught_by=('test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit', 'TestWindowPrefixMachine'),
    edits=(
        Edit(
            'paged/groups.py',
            '        self._let_go(newly)\n',
            '        self._let_go(reversed(newly))\n',
        ),
    ),
)
