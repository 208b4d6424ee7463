"""r57: block_table(s, layer) answers group 0's table whatever the layer (CONTRACT.md, "Hybrid models"); s67
transposed."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r57",
    title="block_table ignores the layer",
    symptom="every layer names group 0's table (the layer still checked): a window group's -1 entries and its blocks are never seen",
    caught_by=("hybrid",),  # -k hybrid: the hybrid tests and the hybrid vectors
    notes="cargo test in ci/examples/rust kills it: every test of tests/hybrid.rs that reads a window group's table, wire's a_hybrid_transcript; the vectors hybrid-tables-on-one-pool and most hybrid-* (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            C,
            "        Ok(seq.tables[self.group_of[self.layer(layer)?]].clone())\n",
            "        self.layer(layer)?;\n        Ok(seq.tables[0].clone())\n",
        ),
    ),
)
