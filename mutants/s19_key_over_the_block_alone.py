"""s19: a key over the block alone, not the whole prefix."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s19',
    title='A key over the block alone, not the whole prefix',
    symptom='a block of tokens is served after another prefix: a hit returns data a different prefix wrote',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-key-is-the-whole-prefix]'),
    # Lookups and registrations hash a block's own tokens, not the prefix before it (the first prefix-caching
    # designs' bug): every key hangs from the root of the prefix tree.
    edits=(
        Edit(
            'paged/prefix.py',
            '            child = node.children.get(tuple(tokens[len(path) * bs : (len(path) + 1) * bs]))\n',
            '            child = self.root.children.get(tuple(tokens[len(path) * bs : (len(path) + 1) * bs]))\n',
        ),
        Edit(
            'paged/groups.py',
            '            parent = nodes[i - 1] if i else index.root\n',
            '            parent = index.root\n',
        ),
    ),
)
