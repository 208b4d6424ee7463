from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v11",
    title="A cached block popped for reuse is not evicted (lazy eviction skipped)",
    symptom="the reused block keeps its hash and its hash-map entry: a later prompt hits data another sequence overwrote",
    caught_by=("test_vllm_prefix_caching_shared_prompts_matches_the_oracle_until_a_duplicate",),
    notes="ENGINES.md bug 7 (vllm #4761: an evicted block stays in the hash map), at the pop rather than in the removal (v05).",
    edits=(Edit("vllm/v1/core/block_pool.py",
                "            for block in ret:\n                self._maybe_evict_cached_block(block)\n",
                "            for block in ret:\n"),),
)
