"""r18: sequence ids are narrowed to i32 as the key of the sequence map."""

from mutants import Edit, Mutant

F = "ci/examples/rust/src/cache.rs"
PAGES = "ci/examples/rust/src/cache/pages.rs"  # the page tables look sequences up too

MUTANT = Mutant(
    id="r18",
    title="Sequence ids narrowed to i32",
    symptom="ids that differ only above bit 31 are one sequence: add_seq(2^32) after add_seq(0) is a reused id",
    caught_by=("test_vector[range-sequence-ids-64-bits]",),
    # The public calls still take i64; the map's key narrows and every lookup casts.
    notes="cargo test in ci/examples/rust kills it: sequence_ids_use_all_64_bits",
    edits=(
        Edit(F, "    seqs: HashMap<SeqId, Seq>,\n", "    seqs: HashMap<i32, Seq>,\n"),
        Edit(F, "if self.seqs.contains_key(&seq_id) {", "if self.seqs.contains_key(&(seq_id as i32)) {"),
        Edit(F, "self.seqs.insert(seq_id, empty);", "self.seqs.insert(seq_id as i32, empty);"),
        Edit(F, "self.seqs.insert(seq_id, Seq {", "self.seqs.insert(seq_id as i32, Seq {"),
        Edit(F, "if self.seqs.contains_key(&child) {", "if self.seqs.contains_key(&(child as i32)) {"),
        Edit(F, "self.seqs.insert(child, copy);", "self.seqs.insert(child as i32, copy);"),
        Edit(F, "self.seqs.remove(&seq_id)", "self.seqs.remove(&(seq_id as i32))"),
        Edit(F, "self.seqs.get_mut(&seq_id).expect(\"checked live above\").tokens", "self.seqs.get_mut(&(seq_id as i32)).expect(\"checked live above\").tokens"),
        Edit(F, "let seq = self.seqs.get_mut(&seq_id)", "let seq = self.seqs.get_mut(&(seq_id as i32))"),
        Edit(F, "self.seqs.get(&seq_id)", "self.seqs.get(&(seq_id as i32))"),
        Edit(PAGES, "let seq = &self.seqs[id];", "let seq = &self.seqs[&(*id as i32)];"),
    ),
)
