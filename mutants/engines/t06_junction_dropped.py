from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t06",
    title="cache_blocks drops the shared-prefix junction from the reachable boundaries",
    symptom="none through one window group: its coordinator reports no junction to drop",
    caught_by=(),
    notes="SURVIVOR expected. The junction Marconi-style retention keeps (PR #52216) comes from "
    "get_computed_blocks' shared_prefix_boundary, which UnitaryKVCacheCoordinator always returns as 0: with "
    "one window group the junction is never kept, edited or not (the xfail vllm-served-junction-never-kept).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "        if request.shared_prefix_boundary:\n            reachable_boundaries.append(request.shared_prefix_boundary)\n",
                "        if False:\n            reachable_boundaries.append(request.shared_prefix_boundary)\n"),),
)
