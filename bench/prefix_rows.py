"""The prefix-caching rows: positions served, blocks held or computed, and the lookup's cost."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .inputs import kv_input
from .sizes import B, D, H, L, SEED, Sizes
from .timing import Result, Side, race, ratio


def servable(prompt: list[int], history: int) -> int:
    """Positions of a prompt that a cache can possibly serve: the full blocks of what an earlier
    request computed (`history` tokens of it), ending before the prompt's last token."""
    return min(history // B, (len(prompt) - 1) // B) * B


def serve_requests(impl: Any, prompts: list[list[int]], histories: list[int], free_each: bool, caching: bool,
                   k: np.ndarray, v: np.ndarray) -> tuple[int, int, int]:
    """Each prompt in turn: add_seq with its tokens, then append what was not served to
    every layer; free it after (a chat's turn) or keep it live (concurrent requests).
    Returns (positions served, blocks held at the end, free + cached, blocks ever computed)."""
    blocks = sum(-(-len(p) // B) for p in prompts)
    cache = impl.PagedKVCache(blocks, B, L, H, D, prefix_caching=True) if caching else impl.PagedKVCache(blocks, B, L, H, D)
    served = computed = 0
    for seq, prompt in enumerate(prompts):
        hits = cache.add_seq(seq, prompt)  # 0 when caching is off
        served += hits
        computed += -(-len(prompt) // B) - hits // B
        for layer in range(L):
            cache.append(seq, layer, k[layer, :, : len(prompt) - hits], v[layer, :, : len(prompt) - hits])
        if free_each:
            cache.free(seq)
    stats = cache.stats()
    cache.close()
    return served, stats["used"] + stats["cached"], computed


def bench_shared_prompt(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """A shared system prompt and `requests` requests of user_lo..user_hi own tokens each, all live at
    once: positions served over those that can be, over all prompt positions, and blocks held,
    caching on against off, in one run."""
    words = np.random.default_rng(SEED + 1)
    system = [int(t) for t in words.integers(0, 50_000, s.system)]
    prompts = [system + [int(t) for t in words.integers(50_000, 10**6, int(words.integers(s.user_lo, s.user_hi + 1)))]
               for _ in range(s.requests)]
    k, v = kv_input(rng, max(len(p) for p in prompts))
    possible = sum(servable(p, len(system)) for p in prompts[1:])
    served, held_on, _ = serve_requests(impl, prompts, [], False, True, k, v)
    _, held_off, _ = serve_requests(impl, prompts, [], False, False, k, v)
    total = sum(len(p) for p in prompts)
    what = f"{s.requests} requests: a {s.system}-token system prompt + {s.user_lo}..{s.user_hi} own tokens"
    return [
        Result("prefix_shared_served_of_possible", served / possible, note=f"{served} of {possible} servable positions; {what}"),
        Result("prefix_shared_served_fraction", served / total, note=f"{served} of {total} prompt positions"),
        Result("prefix_shared_blocks_on_vs_off", held_on / held_off, note=f"{held_on} blocks held with caching on, {held_off} off"),
    ]


def bench_chat(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """A chat of `turns` turns: each prompt is the whole history (every earlier prompt and answer) plus
    the user's new tokens; the answer is appended after it, then the turn's sequence is freed."""
    words = np.random.default_rng(SEED + 2)
    history: list[int] = []
    prompts, histories = [], []
    for _ in range(s.turns):
        prompt = history + [int(t) for t in words.integers(0, 50_000, s.turn_tokens)]
        prompts.append(prompt)
        histories.append(len(history))
        history = prompt + [int(t) for t in words.integers(0, 50_000, s.turn_tokens)]  # with the answer
    k, v = kv_input(rng, len(prompts[-1]))
    # The answer of a turn is part of the next prompt, so it is computed with that prompt here: the history
    # the cache can serve is the previous prompt's full blocks (its answer's blocks were never written).
    possible = sum(servable(p, len(prev)) for p, prev in zip(prompts[1:], prompts))
    served, _, computed_on = serve_requests(impl, prompts, histories, True, True, k, v)
    _, _, computed_off = serve_requests(impl, prompts, histories, True, False, k, v)
    total = sum(len(p) for p in prompts)
    return [
        Result("prefix_chat_served_of_possible", served / possible, note=f"{served} of {possible} servable positions; {s.turns} turns of {s.turn_tokens} + {s.turn_tokens} tokens"),
        Result("prefix_chat_served_fraction", served / total, note=f"{served} of {total} prompt positions"),
        Result("prefix_chat_blocks_on_vs_off", computed_on / computed_off, note=f"blocks computed: {computed_on} on, {computed_off} off"),
    ]


def bench_lookup(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """add_seq's lookup (then free) of a cached prompt: per block served, a long prompt against a short
    one, and the same prompt among `lookup_crowd` other cached prompts against alone."""
    words = np.random.default_rng(SEED + 3)

    def cached(prompts: list[list[int]]) -> Any:
        cache = impl.PagedKVCache(sum(-(-len(p) // B) for p in prompts) + 2, B, 1, 1, 1, prefix_caching=True)
        one = np.zeros((1, max(len(p) for p in prompts), 1), dtype=np.float16)
        for seq, prompt in enumerate(prompts):
            cache.add_seq(seq, prompt)
            cache.append(seq, 0, one[:, : len(prompt)], one[:, : len(prompt)])
            cache.free(seq)
        return cache

    def lookup(cache: Any, prompt: list[int]) -> Callable[[], object]:
        def run() -> None:
            cache.add_seq(-1, prompt)
            cache.free(-1)
        return run

    short, long_ = ([int(t) for t in words.integers(0, 50_000, n + 1)] for n in (s.lookup_short, s.lookup_long))
    crowd = [[int(t) for t in words.integers(0, 50_000, s.lookup_long + 1)] for _ in range(s.lookup_crowd)]
    small, big = cached([short, long_]), cached([short, long_, *crowd])
    a, b = race(Side(lookup(small, long_)), Side(lookup(small, short)), s.repeats, s.warmup)
    c, d = race(Side(lookup(big, long_)), Side(lookup(small, long_)), s.repeats, s.warmup)
    small.close()
    big.close()
    return [
        ratio("prefix_lookup_scaling_length", a, b, f"{s.lookup_short} tokens", f"add_seq + free per block served, {s.lookup_long} tokens",
              per_paged=s.lookup_long // B, per_ref=s.lookup_short // B),
        ratio("prefix_lookup_scaling_cache", c, d, "alone", f"add_seq + free of {s.lookup_long} tokens among {s.lookup_crowd} other cached prompts"),
    ]
