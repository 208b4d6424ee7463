"""s50: the window's start m - W + 1 kept in 16 bits when releasing."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s50',
    title="The window's start kept in 16 bits",
    symptom='B=1024, W=2, one append of 65,600 positions: the start 65,599 read as 63, nothing released, 65 blocks kept (the contract keeps 1)',
    caught_by=('test_vector[range-window-start-past-16-bits]',),
    # CONTRACT.md's integer ranges: a windowed layer's length up to 2**31 - 1, and so the start of its window.
    edits=(
        Edit(
            'paged/groups.py',
            '        return max(0, shortest - self.window + 1) // self.block_size',
            '        return (max(0, shortest - self.window + 1) & 0xFFFF) // self.block_size',
        ),
    ),
)
