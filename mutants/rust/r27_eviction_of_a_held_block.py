"""r27: eviction of a block that has a holder (mutants/s26, transposed)."""

from mutants import Edit, Mutant

A = "ci/examples/rust/src/allocator.rs"

MUTANT = Mutant(
    id="r27",
    title="Eviction of a block that has a holder",
    symptom="a block another sequence still reads is taken for new tokens",
    caught_by=("TestPrefixMachine", "test_vector[prefix-hit-takes-a-holder]"),
    # Every release of a registered block queues it for eviction, not only its last holder's (a block put back while
    # in use). The allocator's check refuses to hand out a queued block that still has a holder (a panic, err
    # internal); the counts are wrong before that.
    notes="cargo test in ci/examples/rust kills it: the vectors (tests/vectors.rs, both modes); no unit test",
    edits=(
        Edit(
            A,
            '        if count == 1 {\n            if keep {\n                self.cached.insert(self.clock, block);\n                self.cached_since.insert(block, self.clock);\n                self.clock += 1;\n            } else {',
            '        if keep {\n            self.cached.insert(self.clock, block);\n            self.cached_since.insert(block, self.clock);\n            self.clock += 1;\n        }\n        if count == 1 {\n            if keep {\n            } else {',
        ),
    ),
)
