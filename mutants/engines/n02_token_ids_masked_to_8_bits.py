from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n02",
    title="Token ids masked to 8 bits before hashing",
    symptom="colliding keys overwrite each other's mapping, so a hit is lost (never a false one: the tokens are compared)",
    caught_by=(),
    notes="ENGINES.md bug 13 (vllm-mlx #444), first half. nano-vllm compares token ids on a hit "
    "(allocate: blocks[id].token_ids != token_ids), so a colliding hash is never a false hit; but the colliding key "
    "overwrites the other block's entry in hash_to_block_id, so a hit the contract keeps is lost: killed by the vector "
    "prefix-token-ids-past-16-bits (engines/README.md). n03 removes the comparison too.",
    edits=(Edit("nanovllm/engine/block_manager.py", "h.update(np.array(token_ids).tobytes())", "h.update((np.array(token_ids) & 0xFF).tobytes())"),),
)
