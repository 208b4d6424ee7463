"""s31: append checks the layer and the shapes before the sequence id."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s31",
    title="The layer and shapes checked before the sequence id",
    symptom="an append to an id that is not live with a bad layer or shape answers invalid_argument, not unknown_sequence: "
    "two conforming ports would answer one request with different kinds",
    caught_by=("test_vector[error-precedence]",),
    # CONTRACT.md "Which error wins": the id before the other arguments. Each check alone is right, so every
    # single-fault test passes; only a call that breaks two rules tells the orders apart.
    edits=(
        Edit(
            "paged/cache.py",
            "        seq, li = self._seq_layer(seq_id, layer)\n"
            "        k_arr, v_arr = as_chunk(k, v, self.n_kv_heads, self.d_head)\n",
            "        li = self._layer(layer)\n"
            "        k_arr, v_arr = as_chunk(k, v, self.n_kv_heads, self.d_head)\n"
            "        seq = self._seq(seq_id)\n",
        ),
    ),
)
