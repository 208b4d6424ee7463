"""s16: a layer's length kept in 16 bits."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s16',
    title="A layer's length kept in 16 bits",
    symptom='after 65,536 positions the length wraps to 0: later positions overwrite the first',
    caught_by=('test_vector[range-length-past-16-bits]',),
    # CONTRACT.md's integer ranges: a layer's length up to 2**31 - 1. The new length is stored as a u16 would hold it.
    edits=(
        Edit(
            'paged/cache.py',
            '        seq.lens[li] = start + tokens\n',
            '        seq.lens[li] = (start + tokens) & 0xFFFF\n',
        ),
        Edit(
            'paged/fast.py',
            '        seq.lens[layer] = start + shape[1]\n',
            '        seq.lens[layer] = (start + shape[1]) & 0xFFFF\n',
        ),
    ),
)
