"""r13: append no longer rejects a chunk of T = 0 positions."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r13",
    title="Accepting an empty chunk",
    symptom="silent no-ops hide engine bugs",
    caught_by=("test_bad_arguments",),
    # The T = 0 check is gone. At a position other than 0 the append is a silent no-op; at
    # position 0, `start + tokens - 1` wraps (release build) and the answer is out_of_blocks
    # or, with B = 1, `err internal` (see mutants/rust/__init__.py). Never invalid_argument.
    notes="cargo test in ci/examples/rust kills it: errors_come_in_the_references_order, wire's worked transcript",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        if tokens == 0 {\n"
            '            return Err(invalid("an append needs at least one position (T = 0)"));\n'
            "        }\n",
            "",
        ),
    ),
)
