"""s34: the decode-step fast path (paged/fast.py) takes a float16 chunk of T = 0 positions."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s34",
    title="The fast accept taking an empty chunk",
    symptom="an empty float16 chunk, what an engine passes, is a silent no-op; only other dtypes raise",
    caught_by=("test_vector[error-zero-tokens]",),
    # The fast path of a chunk within one block takes two float16 ndarrays of the cache's H and D as
    # they are, without the ordered checks of as_chunk; the mutant leaves out T >= 1, so an empty chunk
    # into a block the sequence holds alone is a no-op where the checks would raise. Every other input
    # still goes through them, so s13's tests (a float64 empty chunk) pass. (Before issue 27 the same
    # shortcut was as_chunk's own fast accept, in paged/checks.py.)
    edits=(
        Edit(
            "paged/fast.py",
            "shape[2] == self.d_head and shape[1]):\n",
            "shape[2] == self.d_head):\n",
        ),
    ),
)
