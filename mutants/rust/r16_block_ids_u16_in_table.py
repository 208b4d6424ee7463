"""r16: the block table stores block ids as u16, so block 65,536 is recorded as block 0."""

from mutants import Edit, Mutant

F = "ci/examples/rust/src/cache.rs"
P = "ci/examples/rust/src/pool.rs"  # where reads and writes find their blocks

MUTANT = Mutant(
    id="r16",
    title="Block ids in the table as u16",
    symptom="past 65,536 blocks a table names the wrong block: reads and writes land in another sequence's block",
    caught_by=("test_vector[range-block-ids-past-16-bits]",),
    # The allocator still hands out u32 ids; the table narrows them with `as u16` and every
    # reader widens them back, as a port saving table memory would.
    notes="cargo test in ci/examples/rust kills it: block_ids_past_u16",
    edits=(
        Edit(F, "    tables: Vec<Vec<Entry>>,\n", "    tables: Vec<Vec<Option<u16>>>,\n"),
        Edit(P, "fn write(&mut self, table: &[Entry],", "fn write(&mut self, table: &[Option<u16>],"),
        Edit(P, "fn read(&self, table: &[Entry],", "fn read(&self, table: &[Option<u16>],"),
        Edit(P, "fn locate(table: &[Entry],", "fn locate(table: &[Option<u16>],"),
        Edit(
            P,
            "fn held(table: &[Entry], i: usize) -> BlockId {\n    table[i].expect(\"a released entry is read, written, copied or registered\")\n",
            "fn held(table: &[Option<u16>], i: usize) -> BlockId {\n    table[i].expect(\"a released entry is read, written, copied or registered\") as BlockId\n",
        ),
        Edit(F, "            table.push(Some(block));\n", "            table.push(Some(block as u16));\n"),
        Edit(F, "            self.alloc.incref(block);\n", "            self.alloc.incref(block as BlockId);\n"),
        Edit(F, "let_go(&mut self.alloc, &self.groups, block);", "let_go(&mut self.alloc, &self.groups, block as BlockId);"),
        Edit(F, "table[i] = Some(copy);", "table[i] = Some(copy as u16);"),
        Edit(
            F,
            "table.push(Some(take(&mut self.alloc, &mut self.groups)));",
            "table.push(Some(take(&mut self.alloc, &mut self.groups) as u16));",
        ),
        Edit(F, "            let_go(alloc, groups, block);\n", "            let_go(alloc, groups, block as BlockId);\n"),
        Edit(F, "fn release_out_of_window(table: &mut [Entry],", "fn release_out_of_window(table: &mut [Option<u16>],"),
        Edit(F, "    table: &[Entry],\n    full: usize,", "    table: &[Option<u16>],\n    full: usize,"),
        Edit(
            F,
            "Ok(seq.tables[self.group_of[self.layer(layer)?]].clone())",
            "Ok(seq.tables[self.group_of[self.layer(layer)?]].iter().map(|e| e.map(|b| b as BlockId)).collect())",
        ),
    ),
)
