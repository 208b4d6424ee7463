"""s63: in a hybrid model, the full-attention group released as if it had the largest window."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s63',
    title='A release in the full-attention group',
    symptom="the full-attention layers' early blocks go back to the pool: their gathers lose positions, their tables get -1 entries",
    caught_by=('test_the_issue_example_holds_four_blocks_and_at_most_two', 'test_paged_matches_contiguous_decoding_in_a_hybrid_model'),
    edits=(
        Edit('paged/groups.py', '            groups.append(FullAttention(layers, block_size, prefix_caching))\n',
             '            groups.append(SlidingWindow(layers, block_size, prefix_caching, max(w or 0 for w in windows)) if any(windows) '
             'else FullAttention(layers, block_size, prefix_caching))\n'),
    ),
)
