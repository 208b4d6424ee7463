"""s73: kv_pages hands out the pool in NHD order, [pages, P, H, D], where the contract says HND (page tables)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s73',
    title='NHD read as HND',
    symptom="kv_pages' axes are [pages, P, H, D]: a kernel written for HND reads positions as heads (with H = P the "
    "shapes even agree)",
    caught_by=('test_the_issue_example_at_every_length', 'TestCacheMachine'),
    edits=(
        Edit('paged/page_tables.py', '    return split.transpose(1, 0, 2, 3)\n', '    return split.transpose(1, 2, 0, 3)\n'),
    ),
)
