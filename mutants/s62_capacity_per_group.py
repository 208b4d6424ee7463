"""s62: an append's capacity checked against its group's share of the pool (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s62',
    title='A capacity check per group instead of one over the shared pool',
    symptom='an append is refused while the one pool has the blocks it needs: each group counts only an equal share of the free blocks',
    caught_by=('test_the_issue_example_holds_four_blocks_and_at_most_two', 'TestHybridMachine'),
    edits=(
        Edit('paged/cache.py', '        if needed > alloc.num_free:\n', '        if needed > alloc.num_free // len(self._groups):\n'),
    ),
)
