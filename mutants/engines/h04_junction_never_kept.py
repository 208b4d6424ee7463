from mutants import Edit, Mutant

MUTANT = Mutant(
    id="h04",
    title="The shared-prefix junction is not among a window group's reachable boundaries",
    symptom="a system prompt shared by later requests is never retained in the window group: their hits stay 0",
    caught_by=(),
    notes="SingleTypeKVCacheManager.cache_blocks without `request.shared_prefix_boundary`: what a model of one "
    "window group does anyway (its coordinator reports 0), planted where the hybrid coordinator reports one.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "        if request.shared_prefix_boundary:\n            reachable_boundaries.append(",
                "        if False:\n            reachable_boundaries.append("),),
)
