"""s35: the decode-step fast path (paged/fast.py) takes a block with two holders as private."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s35",
    title="A decode step's block with two holders taken as private",
    symptom="after a fork, a one-token append writes into the block the other sequence still reads",
    caught_by=("test_fork_shares_until_a_write", "TestCacheMachine"),
    # The fast path of a chunk within one block writes in place only into a block with one holder;
    # the mutant counts a block as shared there only from three holders, so a fork's child writes its
    # next token in place. A chunk over two or more blocks still goes through the general path and
    # copies. (Before issue 27 the same check was `BlockAllocator.shared`'s answer for one index.)
    edits=(
        Edit(
            "paged/fast.py",
            "self._alloc.holders(table[first]) > 1:\n",
            "self._alloc.holders(table[first]) > 2:\n",
        ),
    ),
)
