"""s63: in a hybrid model, the full-attention group released as if it had the largest window."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s63',
    title='A release in the full-attention group',
    symptom="the full-attention layers' early blocks go back to the pool: their gathers lose positions, their tables get -1 entries",
    caught_by=('test_the_issue_example_holds_four_blocks_and_at_most_two', 'test_paged_matches_contiguous_decoding_in_a_hybrid_model'),
    edits=(
        Edit(
            'paged/groups.py',
            '        group = FullAttention(layers, block_size, alloc) if window is None else SlidingWindow(layers, block_size, alloc, window)\n',
            '        largest = max(w or 0 for w in windows)  # full attention made a window of the largest W\n        full: Group = SlidingWindow(layers, block_size, alloc, largest) if largest else FullAttention(layers, block_size, alloc)\n        group = full if window is None else SlidingWindow(layers, block_size, alloc, window)\n',
        ),
    ),
)
