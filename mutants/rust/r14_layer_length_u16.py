"""r14: a layer's length is stored as u16, so it wraps past 65,535 positions."""

from mutants import Edit, Mutant

F = "ci/examples/rust/src/cache.rs"
PAGES = "ci/examples/rust/src/cache/pages.rs"  # the page tables read the lengths too

MUTANT = Mutant(
    id="r14",
    title="A layer's length in a u16",
    symptom="past 65,535 positions seq_len and gather wrap to a short length; later appends overwrite position 0 on",
    caught_by=("test_vector[range-length-past-16-bits]",),
    # A port that saves memory on lengths: the field narrows, and every use casts.
    notes="cargo test in ci/examples/rust kills it: a_layer_longer_than_u16, block_ids_past_u16",
    edits=(
        Edit(F, "    lens: Vec<usize>,\n", "    lens: Vec<u16>,\n"),
        Edit(
            F,
            "let (bs, start) = (self.pool.block_size, seq.lens[layer]);",
            "let (bs, start) = (self.pool.block_size, seq.lens[layer] as usize);",
        ),
        Edit(F, "        seq.lens[layer] = start + tokens;\n", "        seq.lens[layer] = (start + tokens) as u16;\n"),
        Edit(F, "        let len = seq.lens[layer];\n", "        let len = seq.lens[layer] as usize;\n"),
        Edit(F, "Ok(seq.lens[self.layer(layer)?])", "Ok(seq.lens[self.layer(layer)?] as usize)"),
        Edit(F, "lens: vec![served; n_layers]", "lens: vec![served as u16; n_layers]"),
        Edit(
            F,
            'let shortest = group.layers.iter().map(|&l| seq.lens[l]).min().expect("a group has a layer");',
            'let shortest = group.layers.iter().map(|&l| seq.lens[l]).min().expect("a group has a layer") as usize;',
        ),
        Edit(PAGES, "let (len, table) = (seq.lens[layer], &seq.tables[g]);", "let (len, table) = (seq.lens[layer] as usize, &seq.tables[g]);"),
        Edit(PAGES, "        let len = seq.lens[layer];\n", "        let len = seq.lens[layer] as usize;\n"),
    ),
)
