from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n03",
    title="Token ids masked to 8 bits before hashing, and no token comparison on a hit",
    symptom="prompts that differ only above bit 7 hit each other's live blocks: wrong K/V served",
    caught_by=("test_tokens_differing_above_8_bits_never_hit",),
    notes="ENGINES.md bug 13 (vllm-mlx #444 masking, openvino.genai #3722 no token comparison).",
    edits=(
        Edit("nanovllm/engine/block_manager.py", "h.update(np.array(token_ids).tobytes())", "h.update((np.array(token_ids) & 0xFF).tobytes())"),
        Edit("nanovllm/engine/block_manager.py", "if block_id == -1 or self.blocks[block_id].token_ids != token_ids:", "if block_id == -1:"),
    ),
)
