"""s42: gather returns W positions, not W - 1 (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s42',
    title='gather returns W positions, not W - 1',
    symptom='gather shows one position more than the window: the one the next token no longer attends to',
    caught_by=('test_paged_matches_contiguous_decoding_with_a_sliding_window',),
    edits=(
        Edit('paged/groups.py', '        return max(0, length - self.window + 1)', '        return max(0, length - self.window)'),
    ),
)
