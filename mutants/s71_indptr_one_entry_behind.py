"""s71: indptr an exclusive scan, one entry behind (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s71',
    title='indptr exclusive by one',
    symptom="indptr[i + 1] is where sequence i's pages start, not where they end: each sequence reads its "
    "predecessor's pages and the last sequence's are never read",
    caught_by=('test_layers_of_different_lengths_and_a_batch', 'TestCacheMachine'),
    edits=(
        Edit('paged/page_tables.py', '    np.cumsum(counts, out=indptr[1:])\n', '    indptr[1:] = np.cumsum(counts) - counts\n'),
    ),
)
