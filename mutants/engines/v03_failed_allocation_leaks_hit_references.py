from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v03",
    title="Prefix-hit blocks are touched even when the allocation is refused",
    symptom="a refused allocate_slots leaks one reference per hit block",
    caught_by=(),
    notes="SURVIVOR expected. ENGINES.md bug 3 (vllm #11562, #11565). The adapter never asks allocate_slots for a hit "
    "and new blocks in one call (add_seq takes only the hit, which always fits: hit blocks are in the free queue), "
    "so a refused call never carries hit blocks and the leak cannot happen through the contract's calls.",
    edits=(Edit("vllm/v1/core/kv_cache_manager.py", "            # Cannot allocate new blocks\n            return None",
                "            # Cannot allocate new blocks\n            self.block_pool.touch(new_computed_block_list[0])\n            return None"),),
)
