"""s14: sequence ids kept in 32 bits."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s14',
    title='Sequence ids kept in 32 bits',
    symptom='ids that agree in their low 32 bits (5 and 2**32 + 5, -1 and 2**32 - 1) are taken for one sequence',
    caught_by=('test_vector[range-sequence-ids-64-bits]',),
    # CONTRACT.md's integer ranges: a sequence id is any signed 64-bit integer. Every id is wrapped to int32 as it
    # becomes a key of the live sequences, the way a port with an i32 id would store it.
    edits=(
        Edit(
            'paged/cache.py',
            '        sid = as_int(seq_id, "seq_id")\n        if sid in self._seqs:\n',
            '        sid = (as_int(seq_id, "seq_id") + 2**31) % 2**32 - 2**31\n        if sid in self._seqs:\n',
        ),
        Edit(
            'paged/cache.py',
            '        cid = as_int(child, "child")\n',
            '        cid = (as_int(child, "child") + 2**31) % 2**32 - 2**31\n',
        ),
        Edit(
            'paged/checks.py',
            '    sid = as_int(seq_id, "seq_id")\n    try:\n',
            '    sid = (as_int(seq_id, "seq_id") + 2**31) % 2**32 - 2**31\n    try:\n',
        ),
        Edit(
            'paged/cache.py',
            '        del self._seqs[as_int(seq_id, "seq_id")]\n',
            '        del self._seqs[(as_int(seq_id, "seq_id") + 2**31) % 2**32 - 2**31]\n',
        ),
    ),
)
