"""s77: page_table from a snapshot of each table, refreshed only when the table grows (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s77',
    title='a stale id after copy on write',
    symptom="an engine keeping the kernel's block table as a copy it extends as the table grows: a copy on write "
    "replaces an entry in place, and the kernel keeps reading the shared block, without the writer's new positions",
    caught_by=('test_forks_and_copy_on_write', 'TestCacheMachine'),
    edits=(
        Edit('paged/cache.py', '        return page_tables.page_table([group.tables[seq.sid] for seq in seqs], starts, lens, self.block_size, size)\n',
             '        snapshots = self.__dict__.setdefault("_snapshots", {})\n'
             '        for seq in seqs:\n'
             '            if (seq.sid, li) not in snapshots or len(snapshots[seq.sid, li]) != len(group.tables[seq.sid]):\n'
             '                snapshots[seq.sid, li] = list(group.tables[seq.sid])\n'
             '        return page_tables.page_table([snapshots[seq.sid, li] for seq in seqs], starts, lens, self.block_size, size)\n'),
    ),
)
