from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v08",
    title="A request's blocks are freed head first, so eviction is not tail first",
    symptom="the first block of a prefix is evicted before its descendants, stranding them",
    caught_by=("test_prefix",),
    notes="ENGINES.md bug 17 (llm-d-inference-sim #704).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py", "self.block_pool.free_blocks(reversed(self.pop_blocks_for_free(request_id)))", "self.block_pool.free_blocks(self.pop_blocks_for_free(request_id))"),),
)
