"""r33: fork checks that the child is not live before it checks the parent (CONTRACT.md, "Which error wins")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r33",
    title="Fork checks the child before the parent",
    symptom="fork(an id that is not live, a live id) answers invalid_argument, not unknown_sequence",
    caught_by=("test_vector[error-precedence]",),
    # Each single-fault fork still gets its kind; only a request with both faults tells the orders apart.
    notes="cargo test in ci/examples/rust kills it: errors_come_in_the_references_order (fork(7, 0): an unknown parent onto a live child), the vectors (tests/vectors.rs)",
    edits=(
        Edit(
            "ci/examples/rust/src/cache.rs",
            "        let copy = self.live(parent)?.clone();\n"
            "        if self.seqs.contains_key(&child) {\n"
            '            return Err(invalid(format!("sequence {child} is already live")));\n'
            "        }\n",
            "        if self.seqs.contains_key(&child) {\n"
            '            return Err(invalid(format!("sequence {child} is already live")));\n'
            "        }\n"
            "        let copy = self.live(parent)?.clone();\n",
        ),
    ),
)
