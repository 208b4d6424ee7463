"""r68: a stale id after copy on write (CONTRACT.md, "Page tables for kernels")."""

from mutants import Edit, Mutant

MUTANT = Mutant(
    id='r68',
    title='a stale id after copy on write',
    symptom="the append writes into the copy, but the table keeps the shared block's id: page_table, slot_mapping and block_table name the stale block, whose data is the other holder's",
    caught_by=("page",),  # -k page: the page-table tests and the page-tables-* vectors
    notes="cargo test in ci/examples/rust kills it: page-tables-fork-and-copy-on-write, -hybrid-groups, -engine-geometry-*, the copy-on-write vectors (block_table); cache's the_seeds_worked_example, wire's the_worked_transcript_of_protocol_md, tests/hybrid.rs and tests/window.rs' copy-on-write tests",
    edits=(
        Edit('ci/examples/rust/src/cache.rs', '        // Take the blocks in position order: copies (inside the table), then new blocks.\n        for i in shared {', '        // Take the blocks in position order: copies (in the write path only), then new blocks.\n        let mut written = table.clone();\n        for i in shared {'),
        Edit('ci/examples/rust/src/cache.rs', '            table[i] = Some(copy);\n        }\n        while table.len() <= last {\n            table.push(Some(take(&mut self.alloc, &mut self.groups)));\n        }\n        self.pool.write(table, layer, start, k, v);', '            written[i] = Some(copy);\n        }\n        while table.len() <= last {\n            let block = Some(take(&mut self.alloc, &mut self.groups));\n            table.push(block);\n            written.push(block);\n        }\n        self.pool.write(&written, layer, start, k, v);'),
    ),
)
