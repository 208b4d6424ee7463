from mutants import Edit, Mutant

MUTANT = Mutant(
    id="n01",
    title="A released block keeps its key; reused, its old mapping stays: a stale hit",
    symptom="a prompt hits a block that was reused under another prefix: wrong K/V served",
    caught_by=("test_a_block_reused_under_another_prefix_is_never_served_for_the_old_one",),
    notes="ENGINES.md bug 8 (nano-vllm #163): the fork's fix in deallocate removed, which is upstream nano-vllm's code.",
    edits=(Edit("nanovllm/engine/block_manager.py", "                        del self.hash_to_block_id[block.hash]", "                        pass"),),
)
