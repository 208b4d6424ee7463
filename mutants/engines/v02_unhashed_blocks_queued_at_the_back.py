from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v02",
    title="Blocks without a hash are queued at the back, behind cached ones",
    symptom="a cached block is evicted while free blocks remain; evictions and later served counts too high/low",
    caught_by=("test_prefix",),
    notes="ENGINES.md bug 2 (vllm #42656, before the fix).",
    edits=(Edit("vllm/v1/core/block_pool.py", "self.free_block_queue.prepend_n(blocks_to_evict_first)", "self.free_block_queue.append_n(blocks_to_evict_first)"),),
)
