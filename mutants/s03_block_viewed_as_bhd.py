"""s03: gather reads a block's memory as if it were laid out [B][H][D] (it is [H][B][D])."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s03",
    title="Viewing a block as [B][H][D]",
    symptom="dimensions land in the wrong slots",
    caught_by=("test_gather_preserves_head_token_dimension_order",),
    # A block of one layer is [H, B, D]; the mutant reshapes it to [B, H, D], takes the slots
    # and transposes back, in gather's copy of part of a block (the last, part-full one).
    # Invisible with one head; with more, slot s of head h reads the element at flat index
    # s*H + h.
    edits=(
        Edit(
            "paged/cache.py",
            "                k_out[:, off : off + width] = k_pool[:, block, lo : lo + width]\n"
            "                v_out[:, off : off + width] = v_pool[:, block, lo : lo + width]\n",
            "                bhd = (self.block_size, self.n_kv_heads, self.d_head)\n"
            "                k_out[:, off : off + width] = k_pool[:, block].reshape(bhd)[lo : lo + width].transpose(1, 0, 2)\n"
            "                v_out[:, off : off + width] = v_pool[:, block].reshape(bhd)[lo : lo + width].transpose(1, 0, 2)\n",
        ),
    ),
)
