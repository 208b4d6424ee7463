"""s39: blocks released by the longest layer's length (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s39',
    title="Blocks released by the longest layer's length",
    symptom='a layer that lags loses blocks its window still reaches',
    caught_by=('TestWindowMachine',),
    edits=(
        Edit(
            'paged/groups.py',
            '        self._release_first(table, self.released_before(self.shortest(lens)))\n',
            '        self._release_first(table, self.released_before(max(lens[i] for i in self.layers)))\n',
        ),
    ),
)
