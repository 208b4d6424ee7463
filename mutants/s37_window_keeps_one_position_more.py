"""s37: the window kept one position too many (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s37',
    title='The window kept one position too many',
    symptom='a block is let go one append late: the table holds it and stats count it used after its last position left every window',
    caught_by=('test_paged_matches_contiguous_decoding_with_a_sliding_window',),
    edits=(
        Edit('paged/groups.py', '        return max(0, shortest - self.window + 1) // self.block_size', '        return max(0, shortest - self.window) // self.block_size'),
    ),
)
