from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n05",
    title="A sequence's blocks are released head first, so eviction is not tail first",
    symptom="with prefix caching across requests, the first block of a prefix is evicted before its descendants",
    caught_by=("test_nano_release_order_single_queue",),
    notes="ENGINES.md bug 17 (llm-d-inference-sim #704). Killed only by the adapter's pinned-policy test (it pins the "
    "deque's order as measured). The contract cannot see it: nano-vllm-fork 20260210 drops a block's key when it is "
    "released, so nothing is ever cached or evicted, and under allocation=any which free block is taken is open.",
    edits=(Edit("nanovllm/engine/block_manager.py", "for block_id in reversed(seq.block_table):", "for block_id in seq.block_table:"),),
)
