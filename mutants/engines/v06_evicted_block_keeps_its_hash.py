from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v06",
    title="Eviction leaves the block's own hash: cache_full_blocks meets a block that already has one",
    symptom="a reused block counts as cached on release though no key names it; registering it again trips the engine's assert",
    caught_by=("test_prefix",),
    notes="ENGINES.md bug 11 (vllm #24084: cache_full_blocks on a block that already has a hash), reached through bug 7's path.",
    edits=(Edit("vllm/v1/core/block_pool.py", "        block.reset_hash()\n        return removed_hashes", "        return removed_hashes"),),
)
