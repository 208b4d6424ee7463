"""r20: a key over the block alone, not the whole prefix (mutants/s19, transposed)."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"
P = "ci/examples/rust/src/prefix.rs"

MUTANT = Mutant(
    id="r20",
    title="A key over the block alone, not the whole prefix",
    symptom="a block of tokens is served after another prefix: a hit returns data a different prefix wrote",
    caught_by=("TestPrefixMachine", "test_vector[prefix-key-is-the-whole-prefix]"),
    # Lookups and registrations key a block by its own tokens, not the prefix before it: every key hangs from the root
    # of the prefix tree (a flat HashMap<Vec<TokenId>, BlockId> of each block's tokens is the same bug).
    notes="cargo test in ci/examples/rust kills it: a_hit_is_a_run_of_whole_prefixes_before_the_last_token, the vectors (tests/vectors.rs, both modes)",
    edits=(
        Edit(
            P,
            'self.nodes[node].children.get(&tokens[path.len() * bs..(path.len() + 1) * bs])',
            'self.nodes[ROOT].children.get(&tokens[path.len() * bs..(path.len() + 1) * bs])',
        ),
        Edit(
            C,
            'let mut parent = if i > 0 { nodes[i - 1] } else { index.root() };',
            'let mut parent = index.root();',
        ),
    ),
)
