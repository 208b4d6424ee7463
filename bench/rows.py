"""The copy rows: gather, prefill, decode, beam search, memory held, and how costs scale."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from oracle import ContiguousKVCache

from .inputs import FLOOR, contiguous_seq, decode_step, fill, floor_decode, floor_gather, floor_pools, floor_prefill, kv_input, one_token, paged_cache, table_ids
from .sizes import B, BLOCK_BYTES, D, H, L, SEED, Sizes
from .timing import Result, Side, last_level_cache, race, ratio


def bench_gather(impl: Any, s: Sizes, rng: np.random.Generator, scattered: bool = False, tail: bool = False) -> list[Result]:
    """gather of one layer against np.copy of the same bytes out of a contiguous array, and against its floor.

    The sequence is prefilled in one go, so a fresh pool gives it consecutive block ids; with
    `scattered`, a second sequence takes every other block (as when sequences decode side by
    side), so no two of its blocks are neighbours. With `tail`, the length is not a multiple of
    B (half a block less), so the last block is part full.
    """
    tokens = s.prompt - B // 2 if tail else s.prompt
    k, v = kv_input(rng, tokens)
    blocks = -(-tokens // B)
    num_blocks = 2 * blocks if scattered else blocks
    cache = paged_cache(impl, num_blocks)
    cache.add_seq(0)
    if scattered:
        cache.add_seq(1)
        for pos in range(0, tokens, B):
            for seq in (0, 1):
                fill(cache, seq, k[:, :, pos:], v[:, :, pos:], min(B, tokens - pos))
    else:
        fill(cache, 0, k, v)
    layers = iter(range(10**9))
    paged = Side(lambda: cache.gather(0, next(layers) % L))
    ref_layers = iter(range(10**9))

    def copy() -> None:
        layer = next(ref_layers) % L
        k[layer].copy(), v[layer].copy()

    floor_layers = iter(range(10**9))
    gather_floor = floor_gather(floor_pools(num_blocks), table_ids(cache, 0), tokens)
    floor = Side(lambda: gather_floor(next(floor_layers) % L))
    race(paged, ref := Side(copy), s.repeats, s.warmup, floor)
    cache.close()
    key = "gather"
    if scattered:
        key = "gather_scattered_tail" if tail else "gather_scattered"
    what = f"gather, one layer of {tokens} tokens, " + ("no two blocks adjacent" if scattered else "blocks in id order")
    return [ratio(f"{key}_vs_copy", paged, ref, "np.copy", what), ratio(f"{key}_vs_floor", paged, floor, FLOOR, what)]


def bench_decode_gather(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """One decode step's gathers, sequences decoding side by side, against copying the same bytes.

    `side_by_side` sequences decode one token per step each, sequence i joining at step i, so
    each one's blocks lie among the others' and their lengths (and part-full last blocks)
    differ. A step gathers every layer of every sequence, layer by layer as a decoder runs;
    the other side copies the same bytes out of one contiguous `[L, H, len, D]` pair per
    sequence. The pool is filled as decoding fills it: layer 0 takes the blocks, one token per
    sequence per step; the other layers are then written in one append per sequence.
    """
    n = s.side_by_side
    lengths = [s.side_by_side_len + n - 1 - i for i in range(n)]
    k, v = kv_input(rng, max(lengths))
    num_blocks = sum(-(-length // B) for length in lengths)
    cache = paged_cache(impl, num_blocks)
    for seq in range(n):
        cache.add_seq(seq)
    for step in range(max(lengths)):
        for seq in range(min(step + 1, n)):
            pos = step - seq
            if pos < lengths[seq]:
                cache.append(seq, 0, k[0, :, pos : pos + 1], v[0, :, pos : pos + 1])
    for seq, length in enumerate(lengths):
        for layer in range(1, L):
            cache.append(seq, layer, k[layer, :, :length], v[layer, :, :length])
    contiguous = [(k[:, :, :length].copy(), v[:, :, :length].copy()) for length in lengths]

    def paged_step() -> None:
        for layer in range(L):
            for seq in range(n):
                cache.gather(seq, layer)

    def copy_step() -> None:
        for layer in range(L):
            for k_seq, v_seq in contiguous:
                k_seq[layer].copy(), v_seq[layer].copy()

    pools = floor_pools(num_blocks)
    floors = [floor_gather(pools, table_ids(cache, seq), length) for seq, length in enumerate(lengths)]

    def floor_step() -> None:
        for layer in range(L):
            for gather in floors:
                gather(layer)

    race(paged := Side(paged_step), ref := Side(copy_step), s.step_repeats, s.warmup, floor := Side(floor_step))
    cache.close()
    what = f"{L} x {n} gathers, {n} sequences of {min(lengths)}-{max(lengths)} tokens decoded side by side"
    return [ratio("decode_gather_vs_copy", paged, ref, "np.copy", what),
            ratio("decode_gather_vs_floor", paged, floor, FLOOR, what)]


def bench_prefill(impl: Any, s: Sizes, rng: np.random.Generator, fragmented: bool = False) -> list[Result]:
    """One append of the whole prompt to every layer, into a fresh sequence.

    With `fragmented`, another sequence holds every other block of a pool twice the size (the
    free blocks are those an earlier sequence freed), so the prompt's blocks are scattered.
    """
    k, v = kv_input(rng, s.prompt)
    blocks = -(-s.prompt // B)
    num_blocks = 2 * blocks if fragmented else blocks
    cache = paged_cache(impl, num_blocks)
    if fragmented:
        cache.add_seq(0)
        cache.add_seq(1)
        for pos in range(0, s.prompt, B):
            for seq in (0, 1):
                cache.append(seq, 0, k[0, :, pos : pos + B], v[0, :, pos : pos + B])
        cache.free(0)  # free: blocks 0, 2, 4, ...; sequence 1 holds 1, 3, 5, ...
    contiguous = ContiguousKVCache(s.prompt, L, H, D)
    # Touching the new contiguous sequence leaves part of it in the CPU caches: every side
    # then writes a scratch buffer larger than the caches, so all write to cold memory.
    scratch = np.ones(max(64 * 2**20, 2 * last_level_cache()), dtype=np.uint8)

    def paged_before() -> None:
        cache.add_seq(0)
        scratch.fill(1)

    def contiguous_before() -> None:
        contiguous_seq(contiguous, 0)
        scratch.fill(1)

    # The floor writes the blocks the paged prefill takes (the same ones each time: it frees them after).
    cache.add_seq(0)
    fill(cache, 0, k, v)
    ids = table_ids(cache, 0)
    cache.free(0)
    prefill_floor = floor_prefill(floor_pools(num_blocks), ids, k, v)
    paged = Side(lambda: fill(cache, 0, k, v), before=paged_before, after=lambda: cache.free(0))
    ref = Side(lambda: fill(contiguous, 0, k, v), before=contiguous_before, after=lambda: contiguous.free(0))
    floor = Side(prefill_floor, before=lambda: scratch.fill(1))
    race(paged, ref, s.slow_repeats, s.warmup, floor)
    cache.close()
    key = "prefill_fragmented" if fragmented else "prefill_append"
    what = f"{L} appends of {s.prompt} tokens" + (", every other block free" if fragmented else "")
    return [ratio(f"{key}_vs_contiguous", paged, ref, "contiguous", what), ratio(f"{key}_vs_floor", paged, floor, FLOOR, what)]


def bench_decode(impl: Any, s: Sizes, rng: np.random.Generator) -> list[Result]:
    """One token appended to every layer of a sequence that holds the prompt."""
    k, v = kv_input(rng, s.prompt)
    k1, v1 = one_token(rng)
    steps = s.warmup + s.repeats
    num_blocks = -(-(s.prompt + steps) // B)
    cache = paged_cache(impl, num_blocks)
    contiguous = ContiguousKVCache(s.prompt + steps, L, H, D)
    cache.add_seq(0)
    fill(cache, 0, k, v)
    contiguous_seq(contiguous, 0)
    fill(contiguous, 0, k, v)
    paged = Side(lambda: decode_step(cache, 0, k1, v1))
    ref = Side(lambda: decode_step(contiguous, 0, k1, v1))
    floor = Side(floor_decode(floor_pools(num_blocks), int(table_ids(cache, 0)[-1]), k1, v1))
    race(paged, ref, s.repeats, s.warmup, floor)
    cache.close()
    what = f"decode step ({L} appends of 1 token)"
    return [ratio("decode_append_vs_contiguous", paged, ref, "contiguous", what),
            ratio("decode_append_vs_floor", paged, floor, FLOOR, what)]


def bench_beam4(impl: Any, s: Sizes, rng: np.random.Generator) -> tuple[Result, Result]:
    """Fork the prompt into 4 beams (then drop the prompt) and write one token to each beam."""
    k, v = kv_input(rng, s.prompt)
    k1, v1 = one_token(rng)
    beams = (1, 2, 3, 4)
    cache = paged_cache(impl, -(-s.prompt // B) + len(beams))
    # The smallest contiguous preallocation that holds the prompt and one more token.
    contiguous = ContiguousKVCache(s.prompt + 1, L, H, D)
    held = {"paged": 0, "contiguous": 0}

    def paged_before() -> None:
        cache.add_seq(0)
        fill(cache, 0, k, v)

    def contiguous_before() -> None:
        contiguous_seq(contiguous, 0)
        fill(contiguous, 0, k, v)

    def beam_search(c: Any) -> None:
        for beam in beams:
            c.fork(0, beam)
        c.free(0)
        for beam in beams:
            decode_step(c, beam, k1, v1)

    def paged_after() -> None:
        held["paged"] = cache.stats()["used"] * BLOCK_BYTES
        for beam in beams:
            cache.free(beam)

    def contiguous_after() -> None:
        held["contiguous"] = contiguous.nbytes()
        for beam in beams:
            contiguous.free(beam)

    paged = Side(lambda: beam_search(cache), paged_before, paged_after)
    ref = Side(lambda: beam_search(contiguous), contiguous_before, contiguous_after)
    race(paged, ref, s.slow_repeats, s.warmup)
    cache.close()
    memory = Result("beam4_memory_vs_contiguous", held["paged"] / held["contiguous"],
                    note=f"{held['paged'] / 2**20:.1f} MiB paged vs {held['contiguous'] / 2**20:.1f} MiB contiguous")
    return ratio("beam4_time_vs_contiguous", paged, ref, "contiguous", "4 forks + 4 decode steps"), memory


def batch_lengths(s: Sizes) -> list[int]:
    """The seeded batch: lengths drawn log-uniformly from batch_lo to batch_hi."""
    rng = np.random.default_rng(SEED)
    logs = rng.uniform(math.log(s.batch_lo), math.log(s.batch_hi), s.batch)
    return [int(round(math.exp(x))) for x in logs]


def bench_memory(impl: Any, s: Sizes, rng: np.random.Generator) -> tuple[Result, Result, dict[str, list[int]]]:
    """The batch added one sequence at a time; bytes held after each, paged and contiguous."""
    lengths = batch_lengths(s)
    k, v = kv_input(rng, s.batch_hi)
    held: dict[str, list[int]] = {"paged": [], "contiguous": []}
    cache = impl.PagedKVCache(sum(-(-n // B) for n in lengths), B, L, H, D)
    for seq, n in enumerate(lengths):
        cache.add_seq(seq)
        fill(cache, seq, k, v, n)
        held["paged"].append(cache.stats()["used"] * BLOCK_BYTES)
    stored = sum(cache.seq_len(seq, layer) for seq in range(len(lengths)) for layer in range(L))
    used = cache.stats()["used"]
    cache.close()
    paged = Result("memory_utilization_paged", stored / (used * B * L),
                   note=f"{used} blocks, {used * BLOCK_BYTES / 2**30:.2f} GiB")

    # The contiguous cache holds max_len positions per sequence whatever it is given, so the
    # batch is added without writing it (writing would only fault in pages, slowly, on a VM).
    contiguous = ContiguousKVCache(s.max_len, L, H, D)
    for seq in range(len(lengths)):
        contiguous.add_seq(seq)
        held["contiguous"].append(contiguous.nbytes())
    stored_c = sum(lengths) * L
    per_position = 2 * H * D * contiguous.k[0].itemsize  # K and V of one position of one layer
    capacity = contiguous.nbytes() // per_position
    for seq in range(len(lengths)):
        contiguous.free(seq)
    cont = Result("memory_utilization_contiguous", stored_c / capacity,
                  note=f"{held['contiguous'][-1] / 2**30:.2f} GiB")
    return paged, cont, held


def bench_scaling_seqs(impl: Any, s: Sizes, rng: np.random.Generator) -> Result:
    """A decode step to one sequence among many live ones against among a few (round robin)."""
    k1, v1 = one_token(rng)
    k, v = kv_input(rng, 1)
    steps = s.warmup + s.repeats
    # Equal pools; each sequence starts with one token. The few get steps/few steps each.
    num_blocks = s.seqs_many + s.seqs_few * (steps // s.seqs_few // B + 2)
    sides = []
    caches = []
    for live in (s.seqs_many, s.seqs_few):
        cache = paged_cache(impl, num_blocks)
        for seq in range(live):
            cache.add_seq(seq)
            fill(cache, seq, k, v)
        sides.append(Side(round_robin(cache, live, k1, v1)))
        caches.append(cache)
    many, few = race(sides[0], sides[1], s.repeats, s.warmup)
    for cache in caches:
        cache.close()
    return ratio("decode_scaling_seqs", many, few, f"{s.seqs_few} live",
                 f"decode step, {s.seqs_many} live sequences")


def round_robin(cache: Any, live: int, k1: list[np.ndarray], v1: list[np.ndarray]) -> Callable[[], None]:
    """A decode step to each of the `live` sequences in turn, one a call."""
    turn = iter(range(10**9))
    return lambda: decode_step(cache, next(turn) % live, k1, v1)


def bench_scaling_length(impl: Any, s: Sizes, rng: np.random.Generator) -> Result:
    """A decode step to a long sequence against to a short one, both in one pool."""
    k, v = kv_input(rng, s.len_long)
    k1, v1 = one_token(rng)
    steps = s.warmup + s.repeats
    cache = paged_cache(impl, -(-(s.len_long + steps) // B) + -(-(s.len_short + steps) // B))
    cache.add_seq(0)
    fill(cache, 0, k, v)
    cache.add_seq(1)
    fill(cache, 1, k, v, s.len_short)
    long, short = race(Side(lambda: decode_step(cache, 0, k1, v1)), Side(lambda: decode_step(cache, 1, k1, v1)),
                       s.repeats, s.warmup)
    cache.close()
    return ratio("decode_scaling_length", long, short, f"{s.len_short} tokens",
                 f"decode step, {s.len_long}-token sequence")


def bench_scaling_gather(impl: Any, s: Sizes, rng: np.random.Generator) -> Result:
    """gather per token: one long sequence against several short ones holding as many tokens.

    Both sides read the same number of bytes in all, layer after layer, so the caches
    and memory see the same working set; only the length of one gather differs.
    """
    k, v = kv_input(rng, s.gather_long)
    n_short = s.gather_long // s.gather_short
    cache = paged_cache(impl, 2 * -(-s.gather_long // B))
    cache.add_seq(0)
    fill(cache, 0, k, v)
    for seq in range(1, n_short + 1):
        cache.add_seq(seq)
        fill(cache, seq, k[:, :, (seq - 1) * s.gather_short:], v[:, :, (seq - 1) * s.gather_short:],
             s.gather_short)
    long_turn, short_turn = iter(range(10**9)), iter(range(10**9))
    long = Side(lambda: cache.gather(0, next(long_turn) % L))

    def short_gather() -> None:
        i = next(short_turn)
        cache.gather(1 + i % n_short, (i // n_short) % L)

    race(long, short := Side(short_gather), s.repeats, s.warmup)
    cache.close()
    return ratio("gather_scaling", long, short, f"{s.gather_short} tokens",
                 f"gather per token, {s.gather_long} tokens", per_paged=s.gather_long, per_ref=s.gather_short)
