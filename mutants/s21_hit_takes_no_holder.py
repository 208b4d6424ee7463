"""s21: a hit that takes no holder."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s21',
    title='A hit that takes no holder',
    symptom='a served block can be evicted, or freed twice, while the sequence that was served it still reads it',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-hit-takes-a-holder]'),
    # SGLang #24153 and mini-sglang #52's family: a lock count not taken on a match.
    edits=(
        Edit(
            'paged/groups.py',
            '            self.alloc.acquire(node.block)\n',
            '            pass\n',
        ),
    ),
)
