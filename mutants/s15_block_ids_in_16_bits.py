"""s15: block ids kept in 16 bits in the table."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s15',
    title='Block ids kept in 16 bits in the table',
    symptom="block 65536 is recorded as block 0: its sequence reads and writes another sequence's block",
    caught_by=('test_vector[range-block-ids-past-16-bits]',),
    # CONTRACT.md's integer ranges: block ids up to 2**31 - 1. A new block's id is stored in the table as a u16 would
    # hold it (its low 16 bits); the allocator still counts the real block.
    edits=(
        Edit(
            'paged/cache.py',
            '            table.append(alloc.allocate())\n',
            '            table.append(alloc.allocate() & 0xFFFF)\n',
        ),
    ),
)
