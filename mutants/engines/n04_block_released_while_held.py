from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n04",
    title="A block is released while one holder still has it",
    symptom="deallocate returns a shared block to the deque at its first holder's free",
    caught_by=("test_fork",),
    notes="ENGINES.md bugs 15 and 16 (sglang #27779, LMCache #5005: two owners alias a page).",
    edits=(Edit("nanovllm/engine/block_manager.py", "            block.ref_count -= 1\n            if block.ref_count == 0:", "            block.ref_count -= 1\n            if block.ref_count <= 1:"),),
)
