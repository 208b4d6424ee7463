"""The geometry under test (SmolLM2's KV), the size of each experiment (full or --quick), and the targets."""

from __future__ import annotations

from dataclasses import dataclass

# SmolLM2's KV geometry and the block size under test.
L, H, D, B = 30, 3, 64, 16
BLOCK_BYTES = 2 * L * H * B * D * 2
SEED = 20240607


@dataclass(frozen=True)
class Sizes:
    """How big each experiment is: the full run, or --quick."""

    prompt: int  # tokens of the prompt for gather, prefill, decode and beam search
    batch: int  # sequences in the memory-utilisation batch
    batch_lo: int  # shortest length in that batch
    batch_hi: int  # longest length in that batch
    max_len: int  # the contiguous cache's preallocation for that batch
    seqs_few: int  # live sequences, decode scaling
    seqs_many: int
    len_short: int  # sequence lengths, decode scaling
    len_long: int
    gather_short: int  # sequence lengths, gather scaling
    gather_long: int
    side_by_side: int  # sequences decoding side by side (the decode-shaped gather)
    side_by_side_len: int  # the last one's length; each one before it joined one step earlier
    repeats: int  # timed calls per side for the fast operations
    slow_repeats: int  # timed calls per side for prefill and beam search
    step_repeats: int  # timed calls per side for the decode-shaped gather (a whole step)
    warmup: int
    system: int  # prefix caching: the shared system prompt's tokens
    requests: int  # requests that share it
    user_lo: int  # each request's own tokens after it, from user_lo to user_hi
    user_hi: int
    turns: int  # a chat: turns, each extending the last
    turn_tokens: int  # the user's and the answer's tokens in each turn
    lookup_short: int  # add_seq lookups: a cached prompt of this many tokens against
    lookup_long: int  # one of this many
    lookup_crowd: int  # other cached prompts in the cache for the crowded lookup
    kernel_batch: int  # page tables for kernels: sequences decoding side by side
    kernel_len: int  # and each one's tokens


FULL = Sizes(prompt=2048, batch=256, batch_lo=20, batch_hi=2000, max_len=2048, seqs_few=10, seqs_many=1000,
             len_short=128, len_long=8192, gather_short=512, gather_long=8192, side_by_side=64,
             side_by_side_len=1000, repeats=300, slow_repeats=30, step_repeats=12, warmup=5,
             system=1024, requests=64, user_lo=64, user_hi=512, turns=8, turn_tokens=128, lookup_short=256,
             lookup_long=4096, lookup_crowd=200, kernel_batch=64, kernel_len=2048)
QUICK = Sizes(prompt=256, batch=16, batch_lo=20, batch_hi=2000, max_len=2048, seqs_few=10, seqs_many=100,
              len_short=128, len_long=1024, gather_short=128, gather_long=1024, side_by_side=8,
              side_by_side_len=100, repeats=40, slow_repeats=4, step_repeats=3, warmup=2,
              system=128, requests=8, user_lo=16, user_hi=64, turns=4, turn_tokens=32, lookup_short=64,
              lookup_long=512, lookup_crowd=20, kernel_batch=8, kernel_len=256)

TARGETS: dict[str, tuple[str, float | None]] = {
    "gather_vs_copy": ("<=", 1.25),
    "gather_vs_floor": ("<=", 1.15),
    "gather_scattered_vs_copy": ("", None),
    "gather_scattered_vs_floor": ("<=", 1.15),
    "gather_scattered_tail_vs_copy": ("", None),
    "gather_scattered_tail_vs_floor": ("<=", 1.15),
    "decode_gather_vs_copy": ("", None),
    "decode_gather_vs_floor": ("<=", 1.15),
    "prefill_append_vs_contiguous": ("<=", 1.25),
    "prefill_append_vs_floor": ("<=", 1.15),
    "prefill_fragmented_vs_contiguous": ("", None),
    "prefill_fragmented_vs_floor": ("<=", 1.15),
    "decode_append_vs_contiguous": ("<=", 1.5),
    "decode_append_vs_floor": ("", None),
    "beam4_time_vs_contiguous": ("<=", 0.1),
    "beam4_memory_vs_contiguous": ("<=", 0.3),
    "memory_utilization_paged": (">=", 0.95),
    "memory_utilization_contiguous": ("", None),
    "decode_scaling_seqs": ("<=", 1.3),
    "decode_scaling_length": ("<=", 1.3),
    "gather_scaling": ("<=", 1.3),
    "prefix_shared_served_of_possible": (">=", 0.9),
    "prefix_shared_served_fraction": ("", None),
    "prefix_shared_blocks_on_vs_off": ("", None),
    "prefix_chat_served_of_possible": ("", None),
    "prefix_chat_served_fraction": ("", None),
    "prefix_chat_blocks_on_vs_off": ("", None),
    "prefix_lookup_scaling_length": ("<=", 1.3),
    "prefix_lookup_scaling_cache": ("<=", 1.3),
    "page_table_vs_numpy": ("<=", 1.1),
    "paged_decode_vs_dense": ("<=", 1.5),
}

