"""r58: last_page_len = len % P (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r58',
    title='last_page_len = len % P',
    symptom="at a length that is a multiple of P the last page's length is 0, not P: a kernel drops a whole page (FlashInfer checks nothing, #320)",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: every page-tables-* vector (tests/vectors.rs, both modes); attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'out.last_page_len.push((len - (len - 1) / p * p) as i32);', 'out.last_page_len.push((len % p) as i32);'),
    ),
)
