from mutants import Edit, Mutant

MUTANT = Mutant(
    id="v10",
    title="Hit blocks that have holders are counted as evictable",
    symptom="a hit on live blocks needs free capacity it does not use; with few free blocks the hit is refused",
    caught_by=("test_prefix",),
    notes="ENGINES.md bug 14 (sglang #35270: shared pages counted twice as evictable, available + evictable > total).",
    edits=(Edit("vllm/v1/core/single_type_kv_cache_manager.py", "return sum(blk.ref_cnt == 0 and not blk.is_null for blk in blocks)", "return sum(not blk.is_null for blk in blocks)"),),
)
