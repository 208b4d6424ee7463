from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w04",
    title="_remove_blocks_in_range frees a skipped block but leaves it in the table",
    symptom="the table keeps a freed block's id; the next release frees it again",
    caught_by=(),
    notes="Half of the release: the reference goes, the entry stays (the shape of vllm #42571, a block queued "
    "twice with sliding window).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "                break\n            freed.append(blocks[i])\n            blocks[i] = self._null_block\n",
                "                break\n            freed.append(blocks[i])\n"),),
)
