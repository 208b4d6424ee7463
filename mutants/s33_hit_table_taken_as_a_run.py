"""s33: the run check skips the first block, where a prefix hit's table usually starts, far from the rest.

Before issue 27 this mutant set a prefix hit's `run` flag without looking at its ids. The flag is
gone (paged/fast.py's `is_run` looks at the ids on every gather); the closest bug left is a run check
that does not look at the first block, the one a hit takes from wherever its key was registered.
"""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s33",
    title="A prefix hit's first block taken as part of a run",
    symptom="a prompt served from a cached block that is not a neighbour of its new blocks gathers the wrong blocks",
    caught_by=("TestPrefixMachine",),
    # A hit's blocks are wherever their keys were registered; the blocks appended after it are often
    # consecutive. The mutant checks only those, so gather copies one slice from the first hit block.
    edits=(
        Edit(
            "paged/fast.py",
            "    if not blocks or blocks[-1] - blocks[0] != len(blocks) - 1:\n"
            "        return False\n"
            "    return blocks == list(range(blocks[0], blocks[0] + len(blocks)))\n",
            "    return blocks[1:] == list(range(blocks[-1] - len(blocks) + 2, blocks[-1] + 1)) if blocks else False\n",
        ),
    ),
)
