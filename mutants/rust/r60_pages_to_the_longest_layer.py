"""r60: the page count from the longest layer (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r60',
    title='the page count from the longest layer',
    symptom="every layer exports as many pages as the sequence's longest layer holds, and its last_page_len: positions a shorter layer never wrote are read",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: page-tables-bad-input, -decode-order-boundary, -engine-geometry-*, -fork-and-copy-on-write, -hybrid-groups (layers of other lengths); attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'let (len, table) = (seq.lens[layer], &seq.tables[g]);', 'let (len, table) = (*seq.lens.iter().max().expect("a layer"), &seq.tables[g]);'),
    ),
)
