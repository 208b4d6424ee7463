"""s74: page_table reads group 0's table for every layer (page tables for kernels, hybrid models)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s74',
    title="another group's table for a layer",
    symptom="a windowed layer of a hybrid model exports the full-attention group's blocks, whose slots of that layer "
    "its group never wrote (vLLM #51328 / #51031: another group's block size or table)",
    caught_by=('test_the_issue_example_at_every_length', 'TestHybridMachine'),
    edits=(
        Edit('paged/cache.py', '        return page_tables.page_table([seq.tables[gi] for seq in seqs], starts, lens, self.block_size, size)\n',
             '        return page_tables.page_table([seq.tables[0] for seq in seqs], starts, lens, self.block_size, size)\n'),
    ),
)
