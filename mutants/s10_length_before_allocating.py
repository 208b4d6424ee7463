"""s10: append advances the layer's length before it checks capacity and allocates."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s10",
    title="Moving the length before allocating",
    symptom="a failed append still grows the sequence",
    caught_by=("test_out_of_blocks_changes_nothing",),
    # The length update moves from after the write to before the capacity check, so an
    # append that raises OutOfBlocks has already grown the layer. A successful append
    # behaves as before.
    edits=(
        Edit(
            "paged/cache.py",
            "        if needed > alloc.num_free:\n",
            "        seq.lens[li] = start + tokens\n        if needed > alloc.num_free:\n",
        ),
        Edit(
            "paged/cache.py",
            "        self._write(table, li, start, k_arr, v_arr)\n        seq.lens[li] = start + tokens\n",
            "        self._write(table, li, start, k_arr, v_arr)\n",
        ),
    ),
)
