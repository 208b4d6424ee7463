"""t04_hit_run_not_reset_at_a_gap's edit, planted through a hybrid model (vllm_hybrid_served): its window group under the hybrid coordinator."""

from dataclasses import replace

from mutants.engines.t04_hit_run_not_reset_at_a_gap import MUTANT as _SAME_EDIT

MUTANT = replace(_SAME_EDIT, id="h07", notes=_SAME_EDIT.notes + " Here through a hybrid model's window group.")
