"""r16: the block table stores block ids as u16, so block 65,536 is recorded as block 0."""

from mutants import Edit, Mutant

F = "ci/examples/rust/src/cache.rs"

MUTANT = Mutant(
    id="r16",
    title="Block ids in the table as u16",
    symptom="past 65,536 blocks a table names the wrong block: reads and writes land in another sequence's block",
    caught_by=("test_vector[range-block-ids-past-16-bits]",),
    # The allocator still hands out u32 ids; the table narrows them with `as u16` and every
    # reader widens them back, as a port saving table memory would.
    notes="cargo test in ci/examples/rust kills it: block_ids_past_u16",
    edits=(
        Edit(F, "    table: Vec<BlockId>,\n", "    table: Vec<u16>,\n"),
        Edit(F, "            self.alloc.incref(block);\n", "            self.alloc.incref(block as BlockId);\n"),
        Edit(
            F,
            "index.is_registered(block));\n            self.alloc.decref(block, registered);",
            "index.is_registered(block as BlockId));\n            self.alloc.decref(block as BlockId, registered);",
        ),
        Edit(F, "            table.push(block);\n", "            table.push(block as u16);\n"),
        Edit(F, "self.alloc.is_shared(seq.table[i])", "self.alloc.is_shared(seq.table[i] as BlockId)"),
        Edit(
            F,
            "let (old, copy) = (seq.table[i], take(&mut self.alloc, &mut self.prefix));",
            "let (old, copy) = (seq.table[i] as BlockId, take(&mut self.alloc, &mut self.prefix));",
        ),
        Edit(F, "seq.table[i] = copy;", "seq.table[i] = copy as u16;"),
        Edit(
            F,
            "seq.table.push(take(&mut self.alloc, &mut self.prefix));",
            "seq.table.push(take(&mut self.alloc, &mut self.prefix) as u16);",
        ),
        Edit(F, "index.register(node, seq.table[i]);", "index.register(node, seq.table[i] as BlockId);"),
        Edit(F, "fn write(&mut self, table: &[BlockId],", "fn write(&mut self, table: &[u16],"),
        Edit(F, "self.row(table[pos / bs], pos % bs)", "self.row(table[pos / bs] as BlockId, pos % bs)"),
        Edit(F, "fn read(&self, table: &[BlockId],", "fn read(&self, table: &[u16],"),
        Edit(F, "(table[pos / bs], pos % bs);", "(table[pos / bs] as BlockId, pos % bs);"),
        Edit(
            F,
            "Ok(self.live(seq_id)?.table.clone())",
            "Ok(self.live(seq_id)?.table.iter().map(|&b| b as BlockId).collect())",
        ),
    ),
)
