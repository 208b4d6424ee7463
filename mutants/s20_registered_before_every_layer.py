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
            '        full_before = min(seq.lens) // bs if self._prefix is not None else 0\n',
            '        full_before = len(seq.nodes) if self._prefix is not None else 0\n',
        ),
        Edit(
            'paged/cache.py',
            '            self._register(seq, full_before, min(seq.lens) // bs)\n',
            '            self._register(seq, full_before, max(full_before, seq.lens[li] // bs))\n',
        ),
    ),
)
