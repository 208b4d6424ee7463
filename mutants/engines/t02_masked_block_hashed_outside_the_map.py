from mutants import Edit, Mutant

MUTANT = Mutant(
    id="t02",
    title="A block the retention mask leaves out is given its hash but kept out of the hash map",
    symptom="a masked block looks cached (it has a hash) but can serve no hit: stats, the free queue's order and evictions go wrong",
    caught_by=(),
    notes="BlockPool.cache_full_blocks sets the masked block's hash and skips the map insert: half of a "
    "registration, the sparse-retention shape of a block whose hash and map disagree (vllm #24084, #4761).",
    edits=(Edit("vllm/v1/core/block_pool.py",
                "            if blk.is_null or (block_mask is not None and not block_mask[i]):\n                continue\n",
                "            if blk.is_null:\n                continue\n"
                "            if block_mask is not None and not block_mask[i]:\n"
                "                blk.set_block_hash(make_block_hash_with_group_id(new_block_hashes[i], kv_cache_group_id),\n"
                "                                   (num_cached_blocks + i + 1) * block_size)\n"
                "                continue\n"),),
)
