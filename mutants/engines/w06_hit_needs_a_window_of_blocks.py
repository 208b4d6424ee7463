from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w06",
    title="A hit needs ceil(W / B) contiguous cached blocks instead of ceil((W - 1) / B)",
    symptom="a hit is missed (or shorter) when W - 1 is a multiple of B",
    caught_by=(),
    notes="The window counted with the new token itself in the cached run: the rule without its -1, the "
    "shape of the eagle variant's +1 (vllm #17398).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "        blocks = cdiv(window_size - 1, block_size)\n",
                "        blocks = cdiv(window_size, block_size)\n"),),
)
