"""s78: a reference count kept in 16 bits when the cache has two groups or more (hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s78',
    title='A reference count kept in 16 bits with two groups or more',
    symptom="the 65,536th holder of a hybrid cache's block wraps its count to 0: the block counts as free while "
    "65,536 sequences read it; a cache of one group counts right",
    caught_by=(
        'test_vector[range-hybrid-2-groups-reference-count-past-16-bits]',
        'test_vector[range-hybrid-3-groups-reference-count-past-16-bits]',
    ),
    # CONTRACT.md's integer ranges, on a port with a path of its own for several groups whose count is a u16: each
    # fork's new holder is counted as a u16 would count it there. (As s17's, the allocator's own check then refuses a
    # second reference to a 'free' block; a port without that check shows the count of 65,538 as 2, and the vectors'
    # stats() after the second free see the block freed.) range-reference-count-past-16-bits, of one group, passes.
    edits=(
        Edit(
            'paged/cache.py',
            '            group.fork(src.sid, cid)\n',
            '            group.fork(src.sid, cid)\n'
            '            if len(self._groups) > 1:\n'
            '                for block in group.tables[cid]:\n'
            '                    if block >= 0:\n'
            '                        self._alloc._refs[block] &= 0xFFFF\n',
        ),
    ),
)
