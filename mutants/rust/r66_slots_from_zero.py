"""r66: the slot mapping from 0 instead of the start (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r66',
    title='the slot mapping from 0 instead of the start',
    symptom="slot_mapping(seq, layer, start, count) answers the slots of positions 0 .. count - 1: a decode step's write lands on position 0",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes='cargo test in ci/examples/rust kills it: page-tables-lengths (slot_mapping 0 0 11 2; the others ask from position 0)',
    edits=(
        Edit('ci/examples/rust/src/cache/pages.rs', 'Ok((first..first + count).map(slot).collect())', 'Ok((0..count).map(slot).collect())'),
    ),
)
