"""r11: append allocates block by block, checking for a free block only as it takes each."""

from mutants import Edit, Mutant

_CHECK = (
    "            if self.alloc.num_free() == 0 {\n"
    "                return Err(CacheError::OutOfBlocks { needed, free: 0 });\n"
    "            }\n"
)

MUTANT = Mutant(
    id="r11",
    title="Allocating new blocks one at a time",
    symptom="a failed multi-block append keeps what it took",
    caught_by=("test_out_of_blocks_changes_nothing",),
    # The up-front capacity check goes; each copy and each new block checks for a free block
    # just before it takes one, so an append that runs out part way keeps the blocks it took.
    notes="cargo test in ci/examples/rust kills it: out_of_blocks_changes_nothing",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        if needed > self.alloc.num_free() {\n",
            "        if false {\n",
        ),
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        for i in shared {\n",
            "        for i in shared {\n" + _CHECK,
        ),
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        while table.len() <= last {\n",
            "        while table.len() <= last {\n" + _CHECK,
        ),
    ),
)
