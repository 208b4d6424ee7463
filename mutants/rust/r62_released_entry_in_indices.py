"""r62: a released window entry (-1) left in indices (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r62',
    title='a released window entry (-1) left in indices',
    symptom="a window layer exports its pages from block 0, a released entry as page -1 (vLLM #42273's stale entries): a kernel reads out of the window, or out of the pool",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes='cargo test in ci/examples/rust kills it: page-tables-window-releases, -decode-order-boundary, -prefix-hit-from-the-right, -hybrid-groups (the paged decode masks the leading pages, so its unit test does not see it)',
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', '                for q in first / p..=(len - 1) / p {\n                    let block = table[q / per_block].expect("a shown position\'s block is held");', '                for q in 0..=(len - 1) / p {\n                    let Some(block) = table[q / per_block] else {\n                        out.indices.push(-1);\n                        continue;\n                    };'),
    ),
)
