from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w05",
    title="_remove_blocks_in_range nulls a skipped block but never frees it",
    symptom="released blocks leak: held by no table, never free, never cached",
    caught_by=(),
    notes="The other half of the release: the entry goes, the reference stays (a leak, the pool shrinks by a "
    "block a window step).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "                break\n            freed.append(blocks[i])\n            blocks[i] = self._null_block\n"
                "        if freed:\n            self.block_pool.free_blocks(freed)\n",
                "                break\n            freed.append(blocks[i])\n            blocks[i] = self._null_block\n"),),
)
