from mutants import Edit, Mutant

MUTANT = Mutant(
    id="w01",
    title="get_num_skipped_tokens counts one token too many (window of W - 2)",
    symptom="a block is released while the next token's window still reaches its last position",
    caught_by=(),
    notes="Off by one in the window's edge (the docstring's example, W=4, n=7 -> 4, becomes 5): the family of "
    "vllm #17398 (a sliding-window drop rule off by one block).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py",
                "num_computed_tokens - self.sliding_window + 1 - self.extra_retained_tokens",
                "num_computed_tokens - self.sliding_window + 2 - self.extra_retained_tokens"),),
)
