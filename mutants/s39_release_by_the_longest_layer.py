"""s39: blocks released by the longest layer's length (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s39',
    title="Blocks released by the longest layer's length",
    symptom='a layer that lags loses blocks its window still reaches',
    caught_by=('TestWindowMachine',),
    edits=(
        Edit('paged/cache.py', '        cut = group.released_before(min(seq.lens[i] for i in group.layers))', '        cut = group.released_before(max(seq.lens[i] for i in group.layers))'),
    ),
)
