from mutants import Edit, Mutant

MUTANT = Mutant(
    id="h03",
    title="Groups are merged by manager class, not by spec (the spec sharing of #51888)",
    symptom="two window groups of different windows are looked up as one: the second takes the first's window for its hit",
    caught_by=(),
    notes="HybridKVCacheCoordinator.verify_and_split_kv_cache_groups without `group.spec == spec`: #51888 is the "
    "coordinator going wrong when several groups share one spec; this is the converse, groups that do not share "
    "one treated as if they did. Reached by a model of three groups (full attention and two windows).",
    edits=(Edit("vllm/v1/core/kv_cache_coordinator.py",
                "                    group.spec == spec\n                    and group.manager_cls is manager_cls\n",
                "                    group.manager_cls is manager_cls\n"),),
)
