from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v01",
    title="With caching off, freed blocks go to the back of the free queue",
    symptom="LIFO reuse lost: a request takes the blocks freed longest ago instead of the last freed",
    caught_by=("test_vllm_free_order_lifo_for_unhashed_blocks",),
    notes="ENGINES.md bug 1 (vllm #48017, fixed by #51482). Killed only by the adapter's pinned-policy test (LIFO reuse "
    "as measured). The contract cannot see it: under allocation=any which free block is taken is open, and with "
    "caching off no block is cached, so the queue's order changes no answer.",
    edits=(Edit("vllm/v1/core/block_pool.py", "if block.block_hash is None or not self.enable_caching:", "if block.block_hash is None and self.enable_caching:"),),
)
