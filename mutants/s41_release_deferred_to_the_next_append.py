"""s41: release deferred to the next append (vLLM's order) (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s41',
    title="Release deferred to the next append (vLLM's order)",
    symptom="after an append the table still holds the blocks it put out of every window, until the sequence's next append, whose release comes before its capacity check",
    caught_by=('TestWindowMachine',),
    notes="vLLM 0.33.0's SlidingWindowManager releases at the start of allocate_slots; CONTRACT.md pins the end of the append.",
    edits=(
        Edit('paged/cache.py', '        if group.window is not None:\n            self._release(seq, gi)\n\n    def gather(', '\n    def gather('),
        Edit('paged/cache.py', '        group, table = self._groups[gi], seq.tables[gi]  # the layer', '        if self._groups[gi].window is not None:\n            self._release(seq, gi)\n        group, table = self._groups[gi], seq.tables[gi]  # the layer'),
        Edit('paged/fast.py', '        if self._groups[gi].window is not None:\n            self._release(seq, gi)\n        return True', '        return True'),
    ),
)
