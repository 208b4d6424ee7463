"""s51: the window's start m - W + 1 kept in unsigned 32 bits when releasing."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s51',
    title="The window's start kept in unsigned 32 bits",
    symptom='while m < W - 1 the start wraps to about 2^32: every entry of the table is released',
    caught_by=('test_vector[range-window-past-16-bits]', 'window'),
    # A signed 32-bit start cannot wrap within the contract's ranges (m and W at most 2**31 - 1); an unsigned one,
    # computed before max(0, ...), wraps below 0. The port then clamps its count to the table, as a slice would.
    edits=(
        Edit(
            'paged/cache.py',
            '        cut = max(0, min(seq.lens) - window + 1) // self.block_size',
            '        cut = min(len(table), ((min(seq.lens) - window + 1) & 0xFFFFFFFF) // self.block_size)',
        ),
    ),
)
