"""s35: the allocator's one-block answer to `shared` takes a block with two holders as private."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s35",
    title="A decode step's block with two holders taken as private",
    symptom="after a fork, a one-token append writes into the block the other sequence still reads",
    caught_by=("test_fork_shares_until_a_write", "TestCacheMachine"),
    # `shared` answers one index (a decode step's) without a range; the mutant counts a block as
    # shared there only from three holders, so a fork's child writes its next token in place. A
    # chunk over two or more blocks still goes through the comprehension and copies.
    edits=(
        Edit(
            "paged/allocator.py",
            "first < len(table) and refs[table[first]] > 1 else []\n",
            "first < len(table) and refs[table[first]] > 2 else []\n",
        ),
    ),
)
