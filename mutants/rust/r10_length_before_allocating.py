"""r10: append advances the layer's length before it checks capacity and allocates."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r10",
    title="Moving the length before allocating",
    symptom="a failed append still grows the sequence",
    caught_by=("test_out_of_blocks_changes_nothing",),
    # The length update moves from after the write to before the capacity check, so an append
    # that fails with OutOfBlocks has already grown the layer. A successful append is unchanged.
    notes="cargo test in ci/examples/rust kills it: out_of_blocks_changes_nothing",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        if needed > self.alloc.num_free() {\n",
            "        seq.lens[layer] = start + tokens;\n        if needed > self.alloc.num_free() {\n",
        ),
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        self.pool.write(table, layer, start, k, v);\n        seq.lens[layer] = start + tokens;\n",
            "        self.pool.write(table, layer, start, k, v);\n",
        ),
    ),
)
