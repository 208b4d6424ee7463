"""s77: page_table from a snapshot of each table, refreshed only when the table grows (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s77',
    title='a stale id after copy on write',
    symptom="an engine keeping the kernel's block table as a copy it extends as the table grows: a copy on write "
    "replaces an entry in place, and the kernel keeps reading the shared block, without the writer's new positions",
    caught_by=('test_forks_and_copy_on_write', 'TestCacheMachine'),
    edits=(
        Edit('paged/cache.py', '        return page_tables.page_table([seq.tables[gi] for seq in seqs], starts, lens, self.block_size, size)\n',
             '        snapshots = self.__dict__.setdefault("_snapshots", {})\n'
             '        for seq in seqs:\n'
             '            if (id(seq), gi) not in snapshots or len(snapshots[id(seq), gi]) != len(seq.tables[gi]):\n'
             '                snapshots[id(seq), gi] = list(seq.tables[gi])\n'
             '        return page_tables.page_table([snapshots[id(seq), gi] for seq in seqs], starts, lens, self.block_size, size)\n'),
    ),
)
