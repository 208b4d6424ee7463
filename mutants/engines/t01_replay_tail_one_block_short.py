from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t01",
    title="Retention 0 keeps need - 1 blocks below the replay boundary, not need",
    symptom="a resent prompt's windowed hit misses: the run a hit at the replay boundary needs is one block short",
    caught_by=(),
    notes="The reachable-boundary tail of SlidingWindowManager.reachable_block_mask one block short: the shape of "
    "#57610 (a run exactly as long as one hit needs, so any shift loses it), one block further.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "                for j in range(max(start_block, end - need), min(end_block, end)):\n",
                "                for j in range(max(start_block, end - need + 1), min(end_block, end)):\n"),),
)
