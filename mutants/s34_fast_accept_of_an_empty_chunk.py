"""s34: as_chunk's fast accept takes a float16 chunk of T = 0 positions."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s34",
    title="The fast accept taking an empty chunk",
    symptom="an empty float16 chunk, what an engine passes, is a silent no-op; only other dtypes raise",
    caught_by=("test_vector[error-zero-tokens]",),
    # as_chunk takes two float16 ndarrays of the cache's H and D as they are, before the ordered
    # checks; the mutant's fast accept leaves out T >= 1, so the checks that would raise never run.
    # Every other input still goes through them, so s13's tests (a float64 empty chunk) pass.
    edits=(
        Edit(
            "paged/checks.py",
            "shape[0] == n_kv_heads and shape[2] == d_head and shape[1]:\n",
            "shape[0] == n_kv_heads and shape[2] == d_head:\n",
        ),
    ),
)
