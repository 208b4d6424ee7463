from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w02",
    title="get_num_skipped_tokens counts one token too few (window of W)",
    symptom="a block stays held one token longer than the window needs",
    caught_by=(),
    notes="Off by one the other way (W=4, n=7 -> 3): blocks come back late, so a later allocation is refused "
    "or evicts a cached block that the contract's pool would have had free.",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "num_computed_tokens - self.sliding_window + 1 - self.extra_retained_tokens",
                "num_computed_tokens - self.sliding_window - self.extra_retained_tokens"),),
)
