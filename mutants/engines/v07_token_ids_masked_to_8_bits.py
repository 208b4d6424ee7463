from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v07",
    title="Token ids masked to 8 bits before hashing",
    symptom="prompts that differ only above bit 7 hit each other's blocks: wrong K/V served",
    caught_by=("test_tokens_differing_above_8_bits_never_hit",),
    notes="ENGINES.md bug 13 (vllm-mlx #444; vLLM compares no tokens on a hit, openvino.genai #3722).",
    edits=(Edit("vllm/v1/core/kv_cache_utils.py", "curr_block_token_ids_tuple = tuple(curr_block_token_ids)", "curr_block_token_ids_tuple = tuple(t & 0xFF for t in curr_block_token_ids)"),),
)
