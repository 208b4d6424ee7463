"""s29: copy on write that moves the other holders to the copy, the writer keeping the original."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s29",
    title="Copy on write moves the other holders to the copy",
    symptom="the other holders' entries change id while they hold the block; the writer keeps the shared id",
    caught_by=("test_hand_example_block_table", "TestCacheMachine"),
    # The data is right everywhere (the others read the copy, the writer writes the original, now its
    # own), and so are the counts: only which entries changed id tells.
    edits=(
        Edit(
            'paged/cache.py',
            '        for i in shared:\n            table[i] = self._copy_block(table[i])\n',
            '        for i in shared:\n            old = table[i]\n            copy = self._copy_block(old)\n            others = [t for t in group.tables.values() if t is not table and old in t]\n            for t in others:\n                t[t.index(old)] = copy\n            self._alloc._refs[copy], self._alloc._refs[old] = len(others), 1\n',
        ),
    ),
)
