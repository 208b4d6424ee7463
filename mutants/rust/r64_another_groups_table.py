"""r64: another group's table for a layer (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r64',
    title="another group's table for a layer",
    symptom="page_table of a layer of group 1 reads group 0's table and rules: a hybrid model's window layer exports the full-attention group's blocks (vLLM #51328's twin)",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: page-tables-decode-order-boundary, -hybrid-groups; attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token (a hybrid model)",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'let g = self.group_of[layer];', 'let g = 0;'),
    ),
)
