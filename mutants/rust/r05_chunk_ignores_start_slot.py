"""r05: a chunk is written from slot 0 of its block instead of from slot seq_len % B."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r05",
    title="A chunk ignoring its starting slot",
    symptom="the write runs past the block's slab",
    caught_by=("test_gather_matches_contiguous_float16",),
    # The slot is counted from the chunk's first position, not the sequence's: every decode
    # step writes slot 0 of its block. gather always starts at position 0, so only writes change.
    notes="cargo test in ci/examples/rust kills it: the_seeds_worked_example, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/pool.rs",
            "let (block, slot) = locate(table, start + t, bs);",
            "let (block, slot) = (locate(table, start + t, bs).0, t % bs);",
        ),
    ),
)
