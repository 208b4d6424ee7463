"""s32: the run check looks at the ends of the blocks only, so a copy on write of a block between them passes unseen.

Before issue 27 a sequence kept a `run` flag, and this mutant kept it set through copy on write. The
flag is gone (paged/fast.py's `is_run` looks at the ids on every gather); the closest bug left is a
run check that, like the stale flag, takes a table whose middle block a copy on write replaced for
one run of consecutive ids.
"""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s32",
    title="A copy on write between the ends of a run unseen",
    symptom="gather reads the shared original, one slice from the first block, instead of the writer's copy",
    caught_by=("test_fork_shares_until_a_write", "TestCacheMachine"),
    # is_run compares the ends first, then every id; the mutant stops after the ends.
    # A fork's child writes to a layer behind the others, into a shared block before its last: the copy
    # replaces that entry, the first and last ids still say b .. b + n - 1, so gather copies the slice
    # table[0] .. table[0] + n and reads the original block, not the copy.
    edits=(
        Edit(
            "paged/fast.py",
            "    return blocks == list(range(blocks[0], blocks[0] + len(blocks)))\n",
            "    return True\n",
        ),
    ),
)
