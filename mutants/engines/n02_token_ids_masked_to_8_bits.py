from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n02",
    title="Token ids masked to 8 bits before hashing",
    symptom="colliding keys; nano-vllm compares the block's tokens on a hit, so no false hit",
    caught_by=(),
    notes="SURVIVOR expected. ENGINES.md bug 13 (vllm-mlx #444), first half. nano-vllm compares token ids on a hit "
    "(allocate: blocks[id].token_ids != token_ids), so a colliding hash is a miss, never a false hit: correct behaviour, "
    "nothing to see. n03 removes the comparison too.",
    edits=(Edit("nanovllm/engine/block_manager.py", "h.update(np.array(token_ids).tobytes())", "h.update((np.array(token_ids) & 0xFF).tobytes())"),),
)
