"""s91: decode (paged/attention.py) reads the first page whole: its leading positions a window does not show are attended."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s91',
    title="The first page's leading positions not masked",
    symptom='with a window, the positions before it on the first exported page weigh in the output (NaN where a pool slot is unwritten)',
    caught_by=('test_decode_matches_dense_attention_on_hand_built_pages',),
    edits=(
        Edit('paged/attention.py', '    skip = kv_len - shown  # the first positions', '    skip = (kv_len - shown) // page_size * page_size  # the first positions'),
    ),
)
