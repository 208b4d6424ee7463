"""s60: free lets go of the groups' tables last group first (hybrid models, CONTRACT.md "Hybrid models")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s60',
    title='Groups freed in reverse order',
    symptom="a free makes the last group's blocks cached first, so pool pressure evicts another group's blocks than the declared order (vLLM #48489 / PR #48532: every group's blocks flattened and reversed once)",
    caught_by=('test_the_order_of_a_free_across_groups_decides_what_pressure_evicts', 'TestHybridPrefixMachine'),
    edits=(
        Edit(
            'paged/cache.py',
            '        for group in self._groups:\n            group.free(seq.sid)\n',
            '        for group in reversed(self._groups):\n            group.free(seq.sid)\n',
        ),
    ),
)
