"""s48: the sliding window W kept in 16 bits."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s48',
    title='The sliding window kept in 16 bits',
    symptom='W = 65,538 acts as W = 2: three positions leave the table -1, -1, 2 and gather one position',
    caught_by=('test_vector[range-window-past-16-bits]',),
    # CONTRACT.md's integer ranges: W up to 2**31 - 1. W is checked, then stored as a u16 would hold it.
    edits=(
        Edit(
            'paged/checks.py',
            '        raise ValueError(f"{what} must be from 2 to 2^31 - 1, got {value}")\n    return value\n',
            '        raise ValueError(f"{what} must be from 2 to 2^31 - 1, got {value}")\n    return value & 0xFFFF\n',
        ),
    ),
)
