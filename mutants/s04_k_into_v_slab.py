"""s04: append writes the K chunk into the V slab as well."""

from . import Edit, Mutant

MUTANT = Mutant(
    id="s04",
    title="Writing K into the V slab",
    symptom="attention mixes the wrong values",
    caught_by=("test_gather_matches_contiguous_float16",),
    edits=(
        Edit(
            "paged/cache.py",
            "self._write(table, li, start, k_arr, v_arr)",
            "self._write(table, li, start, k_arr, k_arr)",
        ),
    ),
)
