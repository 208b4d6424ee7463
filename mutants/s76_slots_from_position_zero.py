"""s76: slot_mapping ignores `start`, mapping positions 0 .. count-1 (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s76',
    title='the slot mapping from 0 instead of len - T',
    symptom="a decode step's one slot is position 0's: the kernel's write lands on the sequence's first position",
    caught_by=('test_the_issue_example_at_every_length',),
    edits=(
        Edit('paged/page_tables.py', '    p = np.arange(start, start + count)\n', '    p = np.arange(0, count)\n'),
    ),
)
