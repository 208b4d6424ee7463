from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v05",
    title="An evicted block stays in the hash map",
    symptom="a later prompt hits the evicted block, whose data another sequence has overwritten",
    caught_by=("test_prefix",),
    notes="ENGINES.md bug 7 (vllm #4761).",
    edits=(Edit("vllm/v1/core/block_pool.py", "self.cached_block_hash_to_block.pop(block_hash, block.block_id)", "self.cached_block_hash_to_block.get_one_block(block_hash)"),),
)
