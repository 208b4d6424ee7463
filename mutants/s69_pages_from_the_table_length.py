"""s69: a sequence's page count taken from its table's length (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s69',
    title="the page count from the table's length",
    symptom="every page of every block in the table is exported, up to r - 1 pages past the layer's last position (and a "
    "layer behind its group's longest one gets the longest one's pages): a kernel reads slots never written",
    caught_by=('test_the_issue_example_at_every_length', 'test_layers_of_different_lengths_and_a_batch'),
    edits=(
        Edit('paged/page_tables.py', '    counts = (n + page_size - 1) // page_size - first',
             '    counts = np.where(n > 0, sizes * r - first, 0)'),
    ),
)
