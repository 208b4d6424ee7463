from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t05",
    title="The replay boundary's run is not clipped to the blocks being cached now",
    symptom="when a prompt's blocks fill over several calls, the run's blocks already passed index the mask from "
    "its end (negative indexes): the wrong new blocks are registered",
    caught_by=(),
    notes="reachable_block_mask without max(start_block, ...): the mask covers only blocks[num_cached:num_full], "
    "and cache_blocks runs after every step, so the run's start is often before the mask's.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "                for j in range(max(start_block, end - need), min(end_block, end)):\n",
                "                for j in range(end - need, min(end_block, end)):\n"),),
)
