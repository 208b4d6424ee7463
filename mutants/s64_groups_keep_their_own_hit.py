"""s64: each group keeps its own hit, not cut to what every group serves (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s64',
    title='A hit not aligned across groups',
    symptom="the groups' tables keep their own longest hits (one pass, no fixed point): a group's table runs past the served positions, or short of them",
    caught_by=('test_a_hit_is_what_every_group_can_serve', 'TestHybridPrefixMachine'),
    edits=(
        Edit('paged/cache.py', '            if common == k:\n                return hits\n            k = common\n', '            return hits\n'),
    ),
)
