from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v04",
    title="Admission undercounts the blocks a request needs (floor instead of ceil)",
    symptom="allocate_slots accepts, then get_new_blocks raises ValueError midway instead of refusing up front",
    caught_by=("test_out_of_blocks_changes_nothing",),
    notes="ENGINES.md bug 6 (vllm #45856, #40027).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py", "        num_required_blocks = cdiv(num_tokens, self.block_size)\n        if apply_admission_cap",
                "        num_required_blocks = num_tokens // self.block_size\n        if apply_admission_cap"),),
)
