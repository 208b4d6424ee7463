"""s68: last_page_len computed as len % P (page tables for kernels, CONTRACT.md "Page tables for kernels")."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s68',
    title='last_page_len = len % P',
    symptom="at a length that is a multiple of P the last page's length is 0, not P: FlashInfer silently drops that "
    "page (vLLM turns 0 into B; pegainfer #291's family)",
    caught_by=('test_the_issue_example_at_every_length', 'TestCacheMachine'),
    edits=(
        Edit('paged/page_tables.py', '    last = np.where(counts > 0, n - (n - 1) // page_size * page_size, 0).astype(np.int32)\n',
             '    last = np.where(counts > 0, n % page_size, 0).astype(np.int32)\n'),
    ),
)
