from mutants import Edit, Mutant

MUTANT = Mutant(
    id="h02",
    title="A window group's eagerly released blocks go back head first (the recycling order of #48435)",
    symptom="blocks a window let go during decode are evicted in the wrong order: a kept tail is recycled before its head",
    caught_by=(),
    notes="SURVIVOR through vllm_hybrid_served: under retention 0 the blocks a window group lets go of are mostly "
    "unregistered, so they go back free and which free block is taken is open under allocation=any; the registered ones "
    "one release lets go of together lie in the runs where the contract's rule (need + 1, the extension) already differs "
    "from vLLM's, so a scenario that sees their order is one of the listed differences. "
    "SlidingWindowManager._remove_blocks_in_range frees its run reversed: #48435 (sessions taking turns, "
    "eagerly released window tails recycled tail first, hybrid hits falling to 0) is about the order these blocks "
    "re-enter the one free queue; this plants the other order and asks whether the suite sees it.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "                break\n            freed.append(blocks[i])\n            blocks[i] = self._null_block\n"
                "        if freed:\n            self.block_pool.free_blocks(freed)\n",
                "                break\n            freed.append(blocks[i])\n            blocks[i] = self._null_block\n"
                "        if freed:\n            self.block_pool.free_blocks(reversed(freed))\n"),),
)
