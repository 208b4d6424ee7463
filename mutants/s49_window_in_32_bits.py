"""s49: the sliding window W kept in 32 bits, narrowed before its range check."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s49',
    title='The sliding window kept in 32 bits',
    symptom='W = 2^32 + 2 is read as an int32, 2, and accepted: a window the contract refuses',
    caught_by=('test_vector[range-window-past-16-bits]',),
    # CONTRACT.md: W outside 2 .. 2**31 - 1 is ValueError. A port that reads W into an int32 checks the wrapped value.
    edits=(
        Edit(
            'paged/checks.py',
            '    value = as_int(sliding_window, what)\n',
            '    value = (as_int(sliding_window, what) + 2**31) % 2**32 - 2**31\n',
        ),
    ),
)
