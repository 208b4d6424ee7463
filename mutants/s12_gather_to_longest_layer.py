"""s12: gather returns every layer at the length of the sequence's longest layer."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s12",
    title="Gathering every layer to the longest layer's length",
    symptom="a layer that has not been written yet returns positions it never stored",
    caught_by=("test_layers_keep_independent_lengths",),
    edits=(
        Edit(
            'paged/cache.py',
            '        length = seq.lens[li]\n        group = self._group(li)',
            '        length = max(seq.lens)\n        group = self._group(li)',
        ),
    ),
)
