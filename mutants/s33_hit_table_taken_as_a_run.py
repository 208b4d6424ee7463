"""s33: a prefix hit's table is taken as one run of consecutive ids, as an empty table is."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s33",
    title="A prefix hit's table taken as a run",
    symptom="a prompt served from cached blocks that are not neighbours gathers the wrong blocks",
    caught_by=("TestPrefixMachine",),
    # The blocks of a hit are wherever their keys were registered; the mutant makes the new sequence's
    # run flag true without looking at them, so gather copies one slice from the first hit block.
    edits=(
        Edit(
            "paged/cache.py",
            "        self._seqs[sid] = _Seq(table, [served] * self.n_layers, ids, run)\n",
            "        self._seqs[sid] = _Seq(table, [served] * self.n_layers, ids, run)\n        self._seqs[sid].run = True\n",
        ),
    ),
)
