"""s65: one prefix index for every group: a key of one group serves another (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s65',
    title="Keys shared across groups",
    symptom="a block registered in one group serves a hit in another: a window group's table takes the full-attention "
    "group's blocks (vLLM keys a cached block by its hash and its group id, BlockHashWithGroupId, so that it cannot)",
    caught_by=('vector hybrid-keys-per-group', 'TestHybridPrefixMachine'),
    edits=(
        Edit('paged/groups.py', '    return groups\n',
             '    for group in groups[1:]:\n        group.index = groups[0].index\n    return groups\n'),
    ),
)
