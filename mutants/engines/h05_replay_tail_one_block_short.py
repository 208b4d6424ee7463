"""t01_replay_tail_one_block_short's edit, planted through a hybrid model (vllm_hybrid_served): its window group under the hybrid coordinator."""

from dataclasses import replace

from mutants.engines.t01_replay_tail_one_block_short import MUTANT as _SAME_EDIT

MUTANT = replace(_SAME_EDIT, id="h05", notes=_SAME_EDIT.notes + " Here through a hybrid model's window group.")
