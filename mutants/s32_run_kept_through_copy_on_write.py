"""s32: copy on write leaves the sequence's run flag set, though the copy's id breaks the run."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s32",
    title="The run flag kept through copy on write",
    symptom="gather reads the shared original, one slice from the first block, instead of the writer's copy",
    caught_by=("test_fork_shares_until_a_write", "TestCacheMachine"),
    # A forked sequence of consecutive blocks writes into a shared block before its last: the copy
    # replaces that entry, but the flag still says the table is one run, so gather copies the slice
    # table[0] .. table[0] + n and reads the original block, not the copy.
    edits=(
        Edit(
            "paged/cache.py",
            "            run = seq.run and not shared",
            "            run = seq.run",
        ),
    ),
)
