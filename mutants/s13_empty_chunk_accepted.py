"""s13: append accepts a chunk of T = 0 positions as a silent no-op."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s13",
    title="Accepting an empty chunk",
    symptom="silent no-ops hide engine bugs",
    caught_by=("test_bad_arguments", "TestFaultMachine"),
    # The T = 0 check is gone (T is never negative, so `tokens < 0` never holds).
    edits=(Edit("paged/checks.py", "    if tokens == 0:\n", "    if tokens < 0:\n"),),
)
