"""s38: the window kept one position too few (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s38',
    title='The window kept one position too few',
    symptom='a block is let go while the next token still attends to its last position: it may be reused and overwritten',
    caught_by=('test_paged_matches_contiguous_decoding_with_a_sliding_window',),
    edits=(
        Edit('paged/groups.py', '        return max(0, shortest - self.window + 1) // self.block_size', '        return max(0, shortest - self.window + 2) // self.block_size'),
    ),
)
