"""s28: a defragmenting cache: a held block's entry changes id, its data moved along."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s28",
    title="Held blocks moved to lower ids after a free (defragmentation)",
    symptom="an entry's id changes while its sequence holds it; an engine that sends workers only new ids reads stale blocks",
    caught_by=("test_free_restores_the_pool", "TestCacheMachine"),
    # After every free, each block held by one sequence alone moves to the lowest free block, K and V
    # copied, so every gather stays right and the counts stay right: only the ids show it. Under
    # allocation=any that is exactly what the renaming must refuse (a block keeps its id while held).
    edits=(
        Edit(
            'paged/cache.py',
            '            group.free(seq.sid)\n        del self._seqs[as_int(seq_id, "seq_id")]\n',
            '            group.free(seq.sid)\n        del self._seqs[as_int(seq_id, "seq_id")]\n        for table in self._groups[0].tables.values():\n            for i, b in enumerate(table):\n                if not self._prefix and self._alloc._free and self._alloc._free[0] < b and self._alloc._refs[b] == 1:\n                    moved = self._alloc.allocate()\n                    self._k[:, :, moved] = self._k[:, :, b]\n                    self._v[:, :, moved] = self._v[:, :, b]\n                    table[i] = moved\n                    self._alloc.decref(b, False)\n',
        ),
    ),
)
