"""s09: free releases the first block of the table and leaks the rest."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s09",
    title="Releasing only the first block",
    symptom="leaks all but one block per request",
    caught_by=("test_free_restores_the_pool",),
    edits=(
        Edit(
            'paged/groups.py',
            '        self._let_go(reversed(table))\n',
            '        self._let_go(reversed(table[:1]))\n',
        ),
    ),
)
