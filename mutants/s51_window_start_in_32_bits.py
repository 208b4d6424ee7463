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
            'paged/groups.py',
            '        return max(0, shortest - self.window + 1) // self.block_size',
            '        return ((shortest - self.window + 1) & 0xFFFFFFFF) // self.block_size',
        ),
        Edit(
            'paged/groups.py',
            '        self._release_first(table, self.released_before(self.shortest(lens)))\n',
            '        self._release_first(table, min(len(table), self.released_before(self.shortest(lens))))\n',
        ),
    ),
)
