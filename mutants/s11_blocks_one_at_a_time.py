"""s11: append allocates block by block, checking for a free block only as it takes each."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s11",
    title="Allocating new blocks one at a time",
    symptom="a failed multi-block append keeps what it took",
    caught_by=("test_out_of_blocks_changes_nothing",),
    # The up-front capacity check goes; each copy and each new block checks for a free block
    # just before it takes one, so an append that runs out part way keeps the blocks it took.
    edits=(
        Edit(
            "paged/cache.py",
            "        if needed > alloc.num_free:\n            raise OutOfBlocks(",
            "        if False:\n            raise OutOfBlocks(",
        ),
        Edit(
            "paged/cache.py",
            "        for i in shared:\n"
            "            table[i] = self._copy_block(table[i])\n",
            "        for i in shared:\n"
            "            if not alloc.num_free:\n"
            "                raise OutOfBlocks(f'no free block to copy block index {i}')\n"
            "            table[i] = self._copy_block(table[i])\n",
        ),
        Edit(
            "paged/cache.py",
            "        while len(table) <= last:\n"
            "            table.append(alloc.allocate())\n",
            "        while len(table) <= last:\n"
            "            if not alloc.num_free:\n"
            "                raise OutOfBlocks(f'no free block for block index {len(table)}')\n"
            "            table.append(alloc.allocate())\n",
        ),
    ),
)
