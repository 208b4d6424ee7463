"""s30: a prefix hit copies the cached block's data into a fresh block instead of sharing it."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s30",
    title="A prefix hit copies the block instead of sharing it",
    symptom="the served positions are right, but the prompt takes a block of its own: sharing, and the memory prefix caching saves, are lost",
    caught_by=("TestPrefixMachine", "test_vector[prefix-hit-takes-a-holder]"),
    # While a free block is left, a hit takes a fresh block and copies the registered one's K and V into
    # it: every gather is right, so only the tables (no shared id) and the counts give it away.
    edits=(
        Edit(
            'paged/cache.py',
            '        for group, (run, skipped) in zip(self._groups, hits):\n            group.add(sid, run, skipped)\n',
            '        for group, (run, skipped) in zip(self._groups, hits):\n            table = [-1] * skipped\n            for node in run[skipped:]:\n                assert node.block is not None\n                if self._alloc._free:\n                    fresh = self._alloc.allocate()\n                    self._k[:, :, fresh] = self._k[:, :, node.block]\n                    self._v[:, :, fresh] = self._v[:, :, node.block]\n                    table.append(fresh)\n                else:\n                    self._alloc.acquire(node.block)\n                    table.append(node.block)\n            group.tables[sid], group.nodes[sid] = table, list(run)\n',
        ),
    ),
)
