"""s25: a cached block counted as free in stats."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s25',
    title='A cached block counted as free in stats',
    symptom='stats() says free + used + cached > N, and free counts blocks that keep a key',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-hit-release-evict]'),
    # CONTRACT.md: free is no holder and no key; cached is no holder and a key.
    edits=(
        Edit(
            'paged/cache.py',
            '"free": takeable - cached,',
            '"free": takeable,',
        ),
    ),
)
