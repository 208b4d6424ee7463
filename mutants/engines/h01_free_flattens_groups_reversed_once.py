from mutants import Edit, Mutant

MUTANT = Mutant(
    id="h01",
    title="A free flattens every group's blocks and reverses them once (#48489, fixed by PR #48532)",
    symptom="after a free the window group's blocks are cached before the full-attention group's: pool pressure evicts the wrong group first",
    caught_by=(),
    notes="HybridKVCacheCoordinator.free as the deferred free of #48489 did it: pop_blocks_for_free (group 0's "
    "blocks, then group 1's) freed reversed once, so the last group's tail goes back first, not group 0's.",
    edits=(Edit("vllm/v1/core/kv_cache_coordinator.py",
                "        for manager in self.single_type_managers:\n            manager.free(request_id)\n",
                "        self.block_pool.free_blocks(reversed(self.pop_blocks_for_free(request_id)))\n"),),
)
