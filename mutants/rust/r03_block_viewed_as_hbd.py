"""r03: gather reads a block's [B][H][D] memory as if it were laid out [H][B][D]."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id="r03",
    title="Viewing a block as [B][H][D] (here its mirror: the port's [B][H][D] block read as [H][B][D])",
    symptom="dimensions land in the wrong slots",
    caught_by=("test_gather_preserves_head_token_dimension_order",),
    # Reads head h of slot s at (h * B + s) * D inside the block instead of (s * H + h) * D.
    # Invisible with one head; always inside the block, so it reads wrong values, never panics.
    notes="cargo test in ci/examples/rust kills it: gather_keeps_head_position_dimension_order (the only crate test with H > 1 that gathers)",
    edits=(
        Edit(
            "ci/examples/rust/src/pool.rs",
            "                let src = self.offset(layer, row, h);\n",
            "                let src = self.offset(layer, self.row(block, 0), 0) + (h * bs + slot) * d;\n",
        ),
    ),
)
