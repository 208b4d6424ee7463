"""s06: fork copies the parent's table but takes no reference on the blocks it now shares."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s06",
    title="Forking without taking a reference on each shared block",
    symptom="the parent's free returns blocks the child still reads",
    caught_by=("test_fork_shares_until_a_write", "test_random_ops_conserve_blocks"),
    edits=(
        Edit(
            'paged/groups.py',
            '        for block in table:\n            if block != RELEASED:\n                self.alloc.incref(block)\n',
            '        for block in table:\n            if block != RELEASED:\n                pass\n',
        ),
    ),
)
