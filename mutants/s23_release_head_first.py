"""s23: release head first."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s23',
    title='Release head first',
    symptom="a freed sequence's first blocks become the oldest cached, so its prefix is evicted before its tail",
    caught_by=('TestPrefixMachine', 'test_vector[prefix-release-order-and-hits]'),
    # CONTRACT.md: free lets go of the table from its last entry to its first.
    edits=(
        Edit(
            'paged/groups.py',
            '        self._let_go(reversed(table))\n',
            '        self._let_go(table)\n',
        ),
    ),
)
