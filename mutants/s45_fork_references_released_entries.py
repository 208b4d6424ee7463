"""s45: fork takes a reference on released (-1) entries (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s45',
    title='fork takes a reference on released (-1) entries',
    symptom="the reference lands on the pool's last block (a Python list's index -1): it is never freed again",
    caught_by=('TestWindowMachine',),
    edits=(
        Edit(
            'paged/groups.py',
            '        for block in table:\n            if block != RELEASED:\n                self.alloc.incref(block)\n',
            '        for block in table:\n            self.alloc.incref(block)\n',
        ),
    ),
)
