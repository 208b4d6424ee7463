"""r63: NHD read as HND (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r63',
    title='NHD read as HND',
    symptom="kv_pages hands out the pool's [P][H][D] rows as if they were [H][P][D]: with H > 1 a head's values come from other heads and slots",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: page-tables-lengths (H = 2), -engine-geometry-* (H = 8): their kv_pages answers; attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token (H = 2)",
    edits=(
        Edit('ci/examples/rust/src/pool.rs', 'let (src, dst) = (self.offset(layer, row, h), ((i * heads + h) * p + slot) * d);', 'let (src, dst) = (self.offset(layer, row, h), ((i * p + slot) * heads + h) * d);'),
    ),
)
