"""r36: release by the longest layer, not the shortest (CONTRACT.md, "Sliding window (opt-in)")."""

from mutants import Edit, Mutant

C = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r36",
    title="Release by the longest layer, not the shortest",
    symptom="a layer that lags loses blocks it still needs: its later writes or gathers reach released entries",
    caught_by=("window",),  # -k window: the window tests and the window-* vectors
    # The release counts from the max of the group's lens: the layer just written decides (the bug of a port that tracks one length).
    notes="cargo test in ci/examples/rust kills it: the_shortest_layer_decides_what_is_released; the window-* vectors (tests/vectors.rs, both modes); the gate first fails the windowed decoder twin",
    edits=(
        Edit(
            C,
            'let released = group.kind.released_before(shortest, bs);',
            'let released = group.kind.released_before(group.layers.iter().map(|&l| seq.lens[l]).max().unwrap(), bs);',
        ),
    ),
)
