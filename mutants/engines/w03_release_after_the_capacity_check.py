from mutants import Edit, Mutant

_CALL = """        self.coordinator.remove_skipped_blocks(
            request.request_id,
            max(0, total_computed_tokens - request.num_in_flight_tokens),
            num_prompt_tokens=request.num_prompt_tokens,
        )
"""
_REFUSE = """            # Cannot allocate new blocks
            return None
"""

MUTANT = Mutant(
    id="w03",
    title="allocate_slots releases the skipped blocks after its capacity check",
    symptom="a step that the released blocks would have made fit is refused",
    caught_by=(),
    notes="The order vLLM's comments argue against (#39734's admission deadlock: capacity counted before the "
    "window gives blocks back). Invisible through the contract's calls: the adapter releases at the end of each "
    "append (remove_skipped_blocks, as the scheduler does between steps), so allocate_slots' own release finds "
    "nothing left, before or after the check; only the measured-policy test that drives allocate_slots itself "
    "(test_window_vllm_releases_before_its_capacity_check) sees the order.",
    edits=(
        Edit("vllm/v1/core/kv_cache_manager.py", _CALL, ""),
        Edit("vllm/v1/core/kv_cache_manager.py", _REFUSE, _REFUSE + "\n" + _CALL),
    ),
)
