"""r65: kernel pages numbered b + j * N (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r65',
    title='kernel pages numbered b + j * N',
    symptom="a manager block b split into kernel pages is numbered b + j * N instead of b * (B / P) + j: with P < B the table names pages kv_pages does not lay out so (vLLM #27547's twin)",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: every page-tables-* vector (each has P < B); attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token (P = 2, 1)",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'out.indices.push((block as usize * per_block + q % per_block) as i32);', 'out.indices.push((block as usize + q % per_block * self.pool.num_blocks) as i32);'),
    ),
)
