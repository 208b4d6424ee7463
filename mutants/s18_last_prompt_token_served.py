"""s18: the last prompt token counted as a hit."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s18',
    title='The last prompt token counted as a hit',
    symptom="a prompt of exactly k full blocks is served whole, so its last token's logits are never computed",
    caught_by=('TestPrefixMachine', 'test_vector[prefix-hit-release-evict]'),
    # CONTRACT.md: the hit ends before the last prompt token (k * B <= len(tokens) - 1).
    edits=(
        Edit(
            'paged/cache.py',
            '        k = (len(ids) - 1) // self.block_size\n',
            '        k = len(ids) // self.block_size\n',
        ),
    ),
)
