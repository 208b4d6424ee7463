"""s70: page_table takes every layer at the sequence's longest layer's length (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s70',
    title="the page count from the longest layer",
    symptom="a layer behind the others (a forward step cut short, a prefill in progress) exports the pages and "
    "last_page_len of the longest layer: positions it never stored",
    caught_by=('test_layers_of_different_lengths_and_a_batch', 'TestCacheMachine'),
    edits=(
        Edit('paged/cache.py', '        lens = [seq.lens[li] for seq in seqs]\n', '        lens = [max(seq.lens) for seq in seqs]\n'),
    ),
)
