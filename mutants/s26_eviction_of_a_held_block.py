"""s26: eviction of a block that has a holder."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s26',
    title='Eviction of a block that has a holder',
    symptom='a block another sequence still reads is taken for new tokens',
    caught_by=('TestPrefixMachine', 'test_vector[prefix-hit-takes-a-holder]'),
    # Every release of a registered block queues it for eviction, not only its last holder's (vLLM #42571's family: a
    # block put back while in use). The allocator's own check refuses to hand out a queued block that still has a
    # holder, an error no correct cache raises; the counts are wrong before that.
    edits=(
        Edit(
            'paged/allocator.py',
            '        if count == 1:\n            if keep:\n                self._cached[block] = None\n            else:\n',
            '        if keep:\n            self._cached[block] = None\n        if count == 1:\n            if keep:\n                pass\n            else:\n',
        ),
    ),
)
