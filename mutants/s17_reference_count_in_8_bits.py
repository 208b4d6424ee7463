"""s17: a reference count kept in 8 bits."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s17',
    title='A reference count kept in 8 bits',
    symptom='the 256th holder of a block wraps its count to 0: the block counts as free while 256 sequences read it',
    caught_by=('test_vector[range-reference-count-past-16-bits]',),
    # CONTRACT.md's integer ranges: a block's holders, any number of live sequences. A fork's new holder is counted as a
    # u8 would count it. (The allocator's own check then refuses a second reference to a 'free' block: an error that no
    # correct cache raises, so the suite fails either way.) The flat position index (block * B + slot), the fifth
    # quantity, has no planted mutant here: this cache indexes its pools by (block, slot) and never forms it. The Rust
    # port does (r17), and the vector range-flat-index-past-32-bits kills that.
    edits=(
        Edit(
            'paged/allocator.py',
            'take it with allocate() or acquire()")\n        self._refs[block] += 1\n',
            'take it with allocate() or acquire()")\n        self._refs[block] = (self._refs[block] + 1) & 0xFF\n',
        ),
    ),
)
