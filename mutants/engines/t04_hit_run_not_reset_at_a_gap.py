from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t04",
    title="A windowed hit's run of cached blocks is not reset at an uncached block",
    symptom="blocks on both sides of a gap count as one run: a hit whose window holds a block never cached (null)",
    caught_by=(),
    notes="SlidingWindowManager.find_longest_cache_hit without its `num_contiguous_blocks = 0`: under sparse "
    "retention gaps between kept runs are the rule, so the count must restart at each.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "            else:\n                num_contiguous_blocks = 0\n        if not match_found:\n",
                "            else:\n                pass\n        if not match_found:\n"),),
)
