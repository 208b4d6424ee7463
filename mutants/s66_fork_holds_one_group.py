"""s66: fork takes a holder on group 0's blocks only (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s66',
    title="A fork that holds one group's blocks",
    symptom="the child's tables of the other groups name blocks it holds no reference on: the parent's free gives them "
    "back to the pool while the child still reads them",
    caught_by=('vector hybrid-fork-and-free-per-group', 'TestHybridMachine'),
    edits=(
        Edit(
            'paged/groups.py',
            '        for block in table:\n            if block != RELEASED:\n                self.alloc.incref(block)\n',
            '        for block in (table if 0 in self.layers else []):  # group 0 alone, the group of layer 0\n            if block != RELEASED:\n                self.alloc.incref(block)\n',
        ),
    ),
)
