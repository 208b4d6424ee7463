"""s08: free drops the sequence's table but releases none of its blocks."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s08",
    title="Freeing the table without releasing blocks",
    symptom="blocks leak on every request",
    caught_by=("test_free_restores_the_pool",),
    edits=(
        Edit(
            'paged/groups.py',
            '                self.alloc.decref(block, self.index.is_registered(block))\n',
            '                pass\n',
        ),
    ),
)
