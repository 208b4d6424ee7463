"""s44: a hit that needs ceil(W / B) blocks, not ceil((W - 1) / B) (sliding window, CONTRACT.md "Sliding window")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s44',
    title='A hit that needs ceil(W / B) blocks, not ceil((W - 1) / B)',
    symptom="when W - 1 is a multiple of B, a hit asks for one block more than the served positions' window reaches, and serves less",
    caught_by=('test_a_release_of_registered_blocks_then_an_eviction_then_a_windowed_hit', 'TestWindowPrefixMachine'),
    edits=(
        Edit('paged/groups.py', '        self.need = -(-(window - 1) // block_size)', '        self.need = -(-window // block_size)'),
    ),
)
