"""r59: the page count from the table's length (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r59',
    title="the page count from the table's length",
    symptom="a layer shorter than its group's table (or a window layer) exports the pages of every table entry: one page too many past its length, a released -1 entry, or pages of another layer's positions",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: every page-tables-* vector (tests/vectors.rs, both modes); attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'for q in first / p..=(len - 1) / p {', 'for q in first / p..table.len() * per_block {'),
    ),
)
