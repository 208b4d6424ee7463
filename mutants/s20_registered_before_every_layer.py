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
            '            group.register(seq.sid, seq.tokens, seq.lens)\n',
            '            group.register(seq.sid, seq.tokens, [seq.lens[li]] * self.n_layers)\n',
        ),
    ),
)
