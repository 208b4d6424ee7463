from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t03",
    title="The replay boundary is the prompt's length, not its length - 1",
    symptom="a block-aligned prompt resent whole is served a block less (or 0): only the extension's position is kept",
    caught_by=(),
    notes="replay_boundaries keeps only the higher of its two reachable positions: the non-EAGLE twin of the bug "
    "PR #54713 fixed for EAGLE (\"retaining just the higher one collapses the resend's hit to 0\").",
    edits=(Edit("vllm/v1/core/kv_cache_coordinator.py",
                "        return (num_prompt_tokens - 1,)\n",
                "        return (num_prompt_tokens,)\n"),),
)
