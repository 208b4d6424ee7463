"""s66: fork takes a holder on group 0's blocks only (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s66',
    title="A fork that holds one group's blocks",
    symptom="the child's tables of the other groups name blocks it holds no reference on: the parent's free gives them "
    "back to the pool while the child still reads them",
    caught_by=('vector hybrid-fork-and-free-per-group', 'TestHybridMachine'),
    edits=(
        Edit('paged/cache.py', '        for table in src.tables:\n            for block in table:\n',
             '        for table in src.tables[:1]:\n            for block in table:\n'),
    ),
)
