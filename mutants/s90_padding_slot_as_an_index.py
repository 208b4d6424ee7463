"""s90: a padding slot of -1 used as an index (vLLM #43810 / #43869): write_slots (paged/attention.py) writes it."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s90',
    title='A padding slot of -1 used as an index',
    symptom="a padded token's K and V land in the pool's last slot (Python's -1), overwriting whatever it holds",
    caught_by=('test_write_slots_skips_padding', 'test_rewriting_every_position_through_slot_mapping_changes_no_bit'),
    edits=(
        Edit('paged/attention.py', '    keep = slots >= 0\n', '    keep = slots >= -1\n'),
    ),
)
