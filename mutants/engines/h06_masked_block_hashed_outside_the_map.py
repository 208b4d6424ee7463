"""t02_masked_block_hashed_outside_the_map's edit, planted through a hybrid model (vllm_hybrid_served): its window group under the hybrid coordinator."""

from dataclasses import replace

from mutants.engines.t02_masked_block_hashed_outside_the_map import MUTANT as _SAME_EDIT

MUTANT = replace(_SAME_EDIT, id="h06", notes=_SAME_EDIT.notes + " Here through a hybrid model's window group.")
