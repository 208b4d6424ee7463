"""s03: gather reads a block's memory as if it were laid out [B][H][D] (it is [H][B][D])."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s03",
    title="Viewing a block as [B][H][D]",
    symptom="dimensions land in the wrong slots",
    caught_by=("test_gather_preserves_head_token_dimension_order",),
    # A block of one layer is [H, B, D]; the mutant reshapes it to [B, H, D], takes the slots
    # and transposes back, in gather's copy of part of a block (the last, part-full one: paged/fast.py's
    # gather copy, the one every gather of the public class takes).
    # Invisible with one head; with more, slot s of head h reads the element at flat index
    # s*H + h.
    edits=(
        Edit(
            "paged/fast.py",
            "                out[:, whole * bs :] = pool[:, blocks[whole], : length - whole * bs]\n",
            "                bhd = (bs, self.n_kv_heads, self.d_head)\n"
            "                out[:, whole * bs :] = pool[:, blocks[whole]].reshape(bhd)[: length - whole * bs].transpose(1, 0, 2)\n",
        ),
    ),
)
