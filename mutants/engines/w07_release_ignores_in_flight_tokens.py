from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w07",
    title="allocate_slots releases up to num_computed_tokens, ignoring num_in_flight_tokens",
    symptom="blocks that a token not yet settled (a lagging layer) still needs are released",
    caught_by=(),
    notes="The release bound taken from the longest layer (max) instead of the settled prefix (min): tokens in "
    "flight (async scheduling, here a layer that lags) lose their window.",
    edits=(Edit("vllm/v1/core/kv_cache_manager.py",
                "            max(0, total_computed_tokens - request.num_in_flight_tokens),\n",
                "            max(0, total_computed_tokens),\n"),),
)
