"""s39: blocks released by the longest layer's length (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s39',
    title="Blocks released by the longest layer's length",
    symptom='a layer that lags loses blocks its window still reaches',
    caught_by=('TestWindowMachine',),
    edits=(
        Edit('paged/cache.py', '        cut = max(0, min(seq.lens) - window + 1) // self.block_size', '        cut = max(0, max(seq.lens) - window + 1) // self.block_size'),
    ),
)
