from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n05",
    title="A sequence's blocks are released head first, so eviction is not tail first",
    symptom="with prefix caching across requests, the first block of a prefix is evicted before its descendants",
    caught_by=(),
    notes="SURVIVOR expected. ENGINES.md bug 17 (llm-d-inference-sim #704). nano-vllm-fork 20260210 drops a block's key "
    "when it is released, so nothing is ever cached or evicted, and under allocation=any the order of the free deque "
    "is not observable: the release order changes nothing the contract can see.",
    edits=(Edit("nanovllm/engine/block_manager.py", "for block_id in reversed(seq.block_table):", "for block_id in seq.block_table:"),),
)
