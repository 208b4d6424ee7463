"""r61: indptr exclusive by one (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r61',
    title='indptr exclusive by one',
    symptom="indptr[i + 1] is the offset before sequence i's pages, not after: each sequence reads the previous one's pages, the first none",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: every page-tables-* vector; attention's paged_decode_matches_dense_attention_over_gather_and_the_new_token",
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', '        for id in seq_ids {\n            let seq = &self.seqs[id];', '        for id in seq_ids {\n            out.indptr.push(out.indices.len() as i32);\n            let seq = &self.seqs[id];'),
        Edit('ci/examples/rust/src/cache/pages.rs', '            out.indptr.push(out.indices.len() as i32);\n        }\n        Ok(out)', '        }\n        Ok(out)'),
    ),
)
