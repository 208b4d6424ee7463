"""s40: a released block still counted as used (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s40',
    title='A released block still counted as used',
    symptom="the entry becomes -1, but the block never returns to the pool: stats()['used'] grows and the pool runs out early",
    caught_by=('TestWindowMachine',),
    edits=(
        Edit(
            'paged/groups.py',
            '        self._let_go(newly)\n',
            '        del newly\n',
        ),
    ),
)
