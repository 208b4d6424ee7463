"""s20: a block registered before every layer has filled it."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s20',
    title='A block registered before every layer has filled it',
    symptom='a hit serves a block whose last layers were never written',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-registered-when-every-layer-is-full]'),
    # vLLM #49125's family: a key set on a block that was not full yet. The layer just written decides, not the shortest.
    edits=(
        Edit(
            'paged/cache.py',
            '            self._register(group.index, seq, gi, min(seq.lens[i] for i in group.layers) // bs)\n',
            '            self._register(group.index, seq, gi, seq.lens[li] // bs)\n',
        ),
    ),
)
