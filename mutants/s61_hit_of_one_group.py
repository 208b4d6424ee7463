"""s61: a hit sized by group 0 alone (hybrid models, CONTRACT.md "Hybrid models")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s61',
    title='The hit of one group only',
    symptom='add_seq serves what group 0 can serve, though another group has fewer of the blocks its layers need: its layers then claim positions no block of theirs holds',
    caught_by=('test_a_hit_is_what_every_group_can_serve', 'TestHybridPrefixMachine'),
    edits=(
        Edit('paged/cache.py', '            common = min(len(run) for run, _ in hits)\n', '            common = len(hits[0][0])\n'),
    ),
)
