"""r67: a released slot of -1 wrapping to the last slot (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r67',
    title='a released slot of -1 wrapping to the last slot',
    symptom="a position whose entry the window released maps to -1 taken modulo the pool, the pool's last slot (vLLM #43810): a kernel writing it overwrites another sequence's last block",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes='cargo test in ci/examples/rust kills it: page-tables-window-releases, -decode-order-boundary, -prefix-hit-from-the-right, -hybrid-groups',
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'let slot = |pos: usize| table[pos / bs].map_or(-1, |block|', 'let wrapped = (-1i64).rem_euclid((self.pool.num_blocks * bs) as i64);\n        let slot = |pos: usize| table[pos / bs].map_or(wrapped, |block|'),
    ),
)
