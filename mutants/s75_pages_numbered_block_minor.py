"""s75: kernel pages numbered b + j * N in the pool while the indices say b * (B / P) + j (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s75',
    title='kernel pages numbered b + j * N instead of b * (B / P) + j',
    symptom="with P below B, kv_pages' page g is part g // N of block g % N: the exported indices (b * r + j) read "
    "other blocks' positions (vLLM #27547: the kernel's inputs built with the manager's block size)",
    caught_by=('test_the_issue_example_at_every_length', 'TestCacheMachine'),
    edits=(
        Edit('paged/page_tables.py',
             '    split = pool.reshape(heads, blocks * (block_size // page_size), page_size, d_head)\n    return split.transpose(1, 0, 2, 3)\n',
             '    split = pool.reshape(heads, blocks, block_size // page_size, page_size, d_head).transpose(2, 1, 0, 3, 4)\n'
             '    return split.reshape(blocks * (block_size // page_size), heads, page_size, d_head)\n'),
    ),
)
