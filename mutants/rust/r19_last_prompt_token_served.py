"""r19: the last prompt token counted as a hit (mutants/s18, transposed)."""

from mutants import Edit, Mutant

P = "ci/examples/rust/src/prefix.rs"

MUTANT = Mutant(
    id="r19",
    title="The last prompt token counted as a hit",
    symptom="a prompt of exactly k full blocks is served whole, so its last token's logits are never computed",
    caught_by=("TestPrefixMachine", "test_vector[prefix-hit-release-evict]"),
    # CONTRACT.md: the hit ends before the last prompt token (k * B <= len(tokens) - 1).
    notes="cargo test in ci/examples/rust kills it: a_hit_is_a_run_of_whole_prefixes_before_the_last_token, prefix_caching_registers_full_blocks_and_serves_them, the vectors (tests/vectors.rs, both modes)",
    # Since the hybrid port the cap is in two places: the walk along the prompt's keys (prefix.rs) and the
    # common hit's most (cache.rs); the bug moves both.
    edits=(
        Edit(
            P,
            'while (path.len() + 1) * bs <= tokens.len().saturating_sub(1) {',
            'while (path.len() + 1) * bs <= tokens.len() {',
        ),
        Edit(
            "ci/examples/rust/src/cache.rs",
            'common_hit(&self.groups, &paths, (ids.len().saturating_sub(1)) / bs, bs)',
            'common_hit(&self.groups, &paths, ids.len() / bs, bs)',
        ),
    ),
)
