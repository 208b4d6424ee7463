"""s41: release deferred to the next append (vLLM's order) (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s41',
    title="Release deferred to the next append (vLLM's order)",
    symptom="after an append the table still holds the blocks it put out of every window, until the sequence's next append, whose release comes before its capacity check",
    caught_by=('TestWindowMachine',),
    notes="vLLM 0.33.0's SlidingWindowManager releases at the start of allocate_slots; CONTRACT.md pins the end of the append.",
    edits=(
        Edit(
            'paged/cache.py',
            '            group.register(seq.sid, seq.tokens, seq.lens)\n        group.release(seq.sid, seq.lens)\n',
            '            group.register(seq.sid, seq.tokens, seq.lens)\n',
        ),
        Edit(
            'paged/cache.py',
            '        group = self._group(li)\n        table = group.tables[seq.sid]',
            '        group = self._group(li)\n        group.release(seq.sid, seq.lens)\n        table = group.tables[seq.sid]',
        ),
        Edit(
            'paged/fast.py',
            '        group.release(seq.sid, seq.lens)\n        return True',
            '        return True',
        ),
    ),
)
