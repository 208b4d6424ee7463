"""s27: a block goes back to the pool while another sequence still holds it."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s27",
    title="A block released while another sequence still holds it",
    symptom="the block is handed out again while held: two sequences write one block",
    caught_by=("test_free_restores_the_pool", "TestCacheMachine"),
    # The release test is off by one (a block with two holders returns to the pool when one lets go;
    # LMCache #5005, sglang #27779's family), and the allocator's own check of a block it hands out is
    # gone, so the held block is silently given to the next allocation. Renaming block ids cannot hide it.
    edits=(
        Edit(
            "paged/allocator.py",
            "        self._refs[block] = count - 1\n        if count == 1:\n",
            "        self._refs[block] = count - 1\n        if count <= 2:\n",
        ),
        Edit(
            "paged/allocator.py",
            "        if self._refs[block]:\n            raise BlockAccountingError(f\"free block {block} has",
            "        if self._refs[block] < 0:\n            raise BlockAccountingError(f\"free block {block} has",
        ),
    ),
)
