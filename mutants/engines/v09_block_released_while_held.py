from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v09",
    title="A block is released while one holder still has it",
    symptom="the block is handed out again while held: two owners alias it",
    caught_by=("test_fork",),
    notes="ENGINES.md bugs 15 and 16 (sglang #27779, the same page freed by two paths; LMCache #5005, two owners alias a page).",
    edits=(Edit("vllm/v1/core/block_pool.py", "            block.ref_cnt -= 1\n            if block.ref_cnt == 0:\n                if block.block_hash is None",
                "            block.ref_cnt -= 1\n            if block.ref_cnt <= 1:\n                if block.block_hash is None"),),
)
