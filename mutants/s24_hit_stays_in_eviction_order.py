"""s24: a hit on a cached block that leaves it in the eviction order."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s24',
    title='A hit on a cached block that leaves it in the eviction order',
    symptom='a block in use is counted as cached, and can be evicted from under its holder',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-release-order-and-hits]'),
    # vLLM's free block queue must drop a block a hit touches; here the hit leaves it queued.
    edits=(
        Edit(
            'paged/allocator.py',
            'is free, not cached")\n            del self._cached[block]\n',
            'is free, not cached")\n            pass\n',
        ),
    ),
)
