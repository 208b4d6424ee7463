"""`PrefixMachine` and `PrefixFaultMachine`: CacheMachine's checks on caches with prefix caching on.

`PrefixMachine` drives the implementation and the oracle's model, both made with
`prefix_caching=True`, through prompts drawn from a three-token alphabet (so prefixes
really repeat), hits, extends with appends, forks, frees, preemptions and long prompts that
force evictions, and requests with samples or beams, where a hit, a fork, a copy on write
of the shared partial block and a copy that fills (and duplicates a key) come together. It
compares every observable after every step: stats (cached and evictions included), every
table and length, the touched sequences' gathers, and the hit counts add_seq returns.
`PrefixFaultMachine` adds the new bad inputs.

Every value written is what a real model would compute for that position: a function of
the token ids up to it (`recompute`). So a position served from the cache must hold what
recomputing it gives, which the machines check on every gather: a hit never returns data
that a different prefix wrote.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import consumes, initialize, invariant, multiple, rule

from tests import harness
from tests.assertions import assert_equal, assert_same_bits
from oracle import OutOfBlocks as ModelOutOfBlocks
from tests.strategies import Geometry, engine_geometries, geometries, model_blocks_needed, now_and_then, tokens_needing

from .cache import CacheMachine, step

ALPHABET = st.integers(0, 2)
PROMPTS = st.lists(ALPHABET, max_size=14)


def recompute(tokens: list[int], start: int, stop: int, layer: int, heads: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """K and V `[heads, stop - start, dims]` float16 of positions start .. stop-1, each a function of the
    token ids up to and including it (a rolling hash of the prefix), the layer, head and dim."""
    h = 0
    prefix_hash = []
    for t in tokens[:stop]:
        h = (h * 1_000_003 + t + 1) % (2**31 - 1)
        prefix_hash.append(h)
    p = np.array(prefix_hash[start:stop], dtype=np.int64)[None, :, None]
    head = np.arange(heads)[:, None, None]
    dim = np.arange(dims)[None, None, :]
    k = ((p * 7 + layer * 131 + head * 17 + dim * 3) % 4001 - 2000) / 8
    v = ((p * 11 + layer * 71 + head * 5 + dim * 13) % 3001 - 1500) / 4
    return k.astype(np.float16), v.astype(np.float16)


def small_geometry() -> st.SearchStrategy[Geometry]:
    return geometries(num_blocks=st.one_of(st.integers(1, 4), st.integers(4, 24))).filter(lambda g: g.block_size <= 4)


# The machines' caches: pools of 1 to 32 blocks, and blocks mostly of 2 to 4 positions (1 sometimes), so
# that a sequence's last block is often partial and a fork shares it (a pool of 1 to 4 blocks or blocks of
# one position made copy on write all but impossible in most examples; measured in machines.coverage).
SMALL_GEOMETRY = geometries(num_blocks=st.integers(1, 32), block_sizes=st.one_of(st.integers(2, 4), st.integers(1, 4)))
# One example in five: an engine's blocks, layers and heads (strategies.ENGINE_SHAPES).
MACHINE_GEOMETRY = now_and_then(SMALL_GEOMETRY, engine_geometries(st.integers(4, 16)))


# A request with samples (PrefixMachine.sample): the arguments of the rules that make one.
SAMPLED: dict[str, st.SearchStrategy[Any]] = dict(
    seq=st.integers(0, 11), base=st.integers(0, 20), blocks=st.integers(1, 6), tail=st.lists(ALPHABET, min_size=1, max_size=6),
    samples=st.integers(1, 3), tokens=st.lists(ALPHABET, min_size=1, max_size=6), alike=st.booleans(),
)


class PrefixMachine(CacheMachine):
    """CacheMachine's calls on caches with prefix caching on, with prompts, extends and evictions."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[list[int]] = []  # every prompt used so far, to draw shared prefixes from

    @initialize(target=CacheMachine.seqs, geometry=MACHINE_GEOMETRY, prompt=PROMPTS)
    @step
    def new_cache(self, geometry: Geometry, prompt: list[int]) -> Any:  # type: ignore[override]
        """Both caches with prefix caching on, and sequence 0 with a prompt, prefilled as far as the pool allows."""
        module = self.wire.impl()
        self.model = harness.model(*geometry, prefix_caching=True)
        self.cache = module.PagedKVCache(*geometry, prefix_caching=True)
        harness.adopt(self.cache, self.model)
        self.call("add_seq", 0, prompt)
        self.prompts.append(prompt)
        self.prefill(0, 64)
        return multiple(0)

    # -- values --------------------------------------------------------------------------------

    def declared(self, seq: int) -> list[int]:
        assert self.model is not None
        return self.model.declared[seq]

    def write(self, seq: int, layer: int, tokens: int) -> BaseException | None:
        """Append the next `tokens` positions of `layer`, valued as recomputing them would give."""
        assert self.model is not None
        start = self.model.seq_len(seq, layer)
        k, v = recompute(self.declared(seq), start, start + tokens, layer, self.model.n_kv_heads, self.model.d_head)
        if k.shape[1] < tokens:  # past the declared tokens: the contract's ValueError (values do not matter)
            k = np.zeros((self.model.n_kv_heads, tokens, self.model.d_head), np.float16)
            v = k
        return self.append(seq, layer, k, v)

    def prefill(self, seq: int, chunk: int) -> bool:
        """Every layer, in order, up to the declared tokens, `chunk` positions at a time; stops when the pool runs out.
        Whether it wrote them all."""
        assert self.model is not None
        for layer in range(self.model.n_layers):
            while self.model.seq_len(seq, layer) < len(self.declared(seq)):
                left = len(self.declared(seq)) - self.model.seq_len(seq, layer)
                if self.write(seq, layer, min(chunk, left)) is not None:
                    return False
        return True

    # -- rules -----------------------------------------------------------------------------------

    @rule(target=CacheMachine.seqs, seq=st.integers(0, 11), base=st.integers(0, 20), keep=st.integers(0, 14), tail=PROMPTS,
          prefill=st.booleans(), chunk=st.integers(1, 9))
    @step
    def add_prompt(self, seq: int, base: int, keep: int, tail: list[int], prefill: bool, chunk: int) -> Any:
        """A prompt that shares the first `keep` tokens of an earlier one (`earlier`), then `tail`; with
        `prefill` the rest of the prompt is appended, layer by layer."""
        if not self.new_prompt(seq, self.earlier(base)[:keep] + tail):
            return multiple()
        if prefill:
            self.prefill(seq, chunk)
        return seq

    @rule(**SAMPLED)
    @step
    def sampled_request(self, seq: int, base: int, blocks: int, tail: list[int], samples: int, tokens: list[int], alike: bool) -> None:
        """A request sampled `samples` times (vLLM's n > 1; `sample`) that then ends: the samples, then the request,
        are freed, their full blocks cached for later prompts (which may share what they decoded)."""
        for s in reversed(self.sample(seq, base, blocks, tail, samples, tokens, alike)):
            self.end(s)

    @rule(target=CacheMachine.seqs, **SAMPLED)
    @step
    def beam_search(self, seq: int, base: int, blocks: int, tail: list[int], samples: int, tokens: list[int], alike: bool) -> Any:
        """A request searched with `samples` beams (`sample`) that replace it: it is freed (the block its beams copied
        goes back to the pool), and they stay live for later steps to extend, fork and free."""
        live = self.sample(seq, base, blocks, tail, samples, tokens, alike)
        if len(live) > 1:
            self.end(live.pop(0))
        return multiple(*live)

    def end(self, seq: int) -> None:
        """Free `seq`, a request that ended; later prompts may share its tokens."""
        self.prompts.append(list(self.declared(seq)))
        self.touch_with_sharers(seq)
        self.call("free", seq)
        self.freed.add(seq)

    def sample(self, seq: int, base: int, blocks: int, tail: list[int], samples: int, tokens: list[int], alike: bool) -> list[int]:
        """A request forked into samples; returns the live ids, the request's first ([] if it was refused).

        The request, under the `seq`-th id not live, has a prompt that shares the first `blocks` blocks of an earlier
        one whose first block is registered (`earlier`), then `tail`, its last block partial: served from the cache as
        far as its blocks are registered, then prefilled a block at a time (as far as the pool allows). Each sample
        is a fork (the lowest id not live) that decodes `tokens` (all alike) or tokens of its own: it copies the shared
        partial block on write, and the copy fills under a key (alike: the same key, so duplicates).
        """
        assert self.model is not None
        free_ids = [i for i in range(12) if i not in self.model.tables]
        if not free_ids:
            return []
        seq = free_ids[seq % len(free_ids)]
        bs = self.model.block_size
        prompt = self.earlier(base, cached=True)[: blocks * bs] + tail
        if len(prompt) % bs == 0 and bs > 1:
            prompt.pop()
        if not self.new_prompt(seq, prompt):
            return []
        live = [seq]
        if not self.prefill(seq, bs):
            return live  # out of blocks: not sampled (as a scheduler would not run it)
        for i in range(samples):
            child = next((c for c in range(12) if c not in self.model.tables), None)
            if child is None:
                break
            self.do_fork(seq, child)
            live.append(child)
            if not self.decode_tokens(child, tokens if alike else [(t + i) % 3 for t in tokens], self.model.n_layers):
                break  # out of blocks: no more samples
        return live

    def earlier(self, base: int, cached: bool = False) -> list[int]:
        """The `base`-th (modulo) of the prompts used so far and the live sequences' tokens (as decoded so far);
        with `cached`, of those whose first block is registered, when there is one. [] before any."""
        assert self.model is not None
        every = self.prompts + [self.declared(s) for s in self.live]
        if cached:
            every = [p for p in every if tuple(p[: self.model.block_size]) in self.model.registry] or every
        return list(every[base % len(every)]) if every else []

    def new_prompt(self, seq: int, prompt: list[int]) -> bool:
        """add_seq of `prompt`; whether it was added (a live `seq` is refused with ValueError).

        add_seq returns the positions served from the cache, which must be the model's.
        """
        if seq in self.model.tables:  # type: ignore[union-attr]
            self.call("add_seq", seq, prompt, pinned=ValueError)
            return False
        got = self.call("add_seq", seq, prompt)  # checked against the model's count (CacheMachine.call)
        event("add_seq served positions from the cache" if got else "add_seq served nothing")
        self.prompts.append(prompt)
        self.touched.add(seq)
        return True

    @rule(seq=CacheMachine.seqs, tokens=st.lists(ALPHABET, min_size=1, max_size=6), layers=st.integers(1, 3))
    @step
    def decode(self, seq: int, tokens: list[int], layers: int) -> None:
        """extend, then a forward step of the new positions over the first `layers` layers."""
        self.decode_tokens(seq, tokens, layers)

    @rule(target=CacheMachine.seqs, parent=CacheMachine.seqs, child=st.integers(0, 11), tokens=st.lists(ALPHABET, min_size=1, max_size=6),
          layers=st.integers(1, 3), parent_too=st.booleans())
    @step
    def fork_and_decode(self, parent: int, child: int, tokens: list[int], layers: int, parent_too: bool) -> Any:
        """Parallel sampling: fork into the `child`-th id not live, and the child decodes `tokens` (a copy on
        write of the shared partial block, which then fills and is registered); with `parent_too`, the parent
        then decodes the same tokens (its own block fills under the same key: a duplicate)."""
        assert self.model is not None
        free_ids = [i for i in range(12) if i not in self.model.tables]
        result = self.do_fork(parent, free_ids[child % len(free_ids)] if free_ids else child)
        if not isinstance(result, int):
            return result
        self.decode_tokens(result, tokens, layers)
        if parent_too:
            self.decode_tokens(parent, tokens, layers)
        return result

    def decode_tokens(self, seq: int, tokens: list[int], layers: int) -> bool:
        """extend, then a forward step of what is not yet written over the first `layers` layers; whether it all fit."""
        assert self.model is not None
        self.call("extend", seq, tokens)
        self.touched.add(seq)
        for layer in range(min(layers, self.model.n_layers)):
            left = len(self.declared(seq)) - self.model.seq_len(seq, layer)
            if left and self.write(seq, layer, left) is not None:
                return False
        return True

    @rule(seq=CacheMachine.seqs, chunk=st.integers(1, 9))
    @step
    def finish_prompt(self, seq: int, chunk: int) -> None:
        """Append whatever the declared tokens still allow, in every layer."""
        self.touched.add(seq)
        self.prefill(seq, chunk)

    @rule(seq=CacheMachine.seqs, layer=st.integers(0, 2), extra=st.integers(1, 3))
    @step
    def past_the_declared_tokens(self, seq: int, layer: int, extra: int) -> None:
        """An append that would run past the declared tokens: ValueError, before any OutOfBlocks."""
        assert self.model is not None
        li = layer % self.model.n_layers
        left = len(self.declared(seq)) - self.model.seq_len(seq, li)
        error = self.write(seq, li, left + extra)
        assert_equal(f"the model's error for append({seq}, {li}) past the declared tokens", type(error).__name__, "ValueError", "the contract's rule")

    @rule(target=CacheMachine.seqs, seq=consumes(CacheMachine.seqs), resume=st.booleans())
    @step
    def preempt(self, seq: int, resume: bool) -> Any:
        """A scheduler out of room preempts a request: it is freed (its full blocks become cached); with `resume`,
        it is added again under its id with its tokens so far, served from the cache as far as its blocks stayed
        registered, and prefilled as far as the pool allows (vLLM's recompute preemption)."""
        tokens = list(self.declared(seq))
        self.end(seq)
        if not resume or not self.new_prompt(seq, tokens):
            return multiple()
        self.prefill(seq, self.model.block_size)  # type: ignore[union-attr]
        return seq

    @rule(big=st.integers(2, 6), fresh=st.integers(3, 1000))
    @step
    def pressure(self, big: int, fresh: int) -> None:
        """A passing request (id 12): a prompt of tokens no other prompt has, `big` blocks long, prefilled
        (evicting cached blocks when none is free) and freed (its full blocks become cached, tail first)."""
        assert self.model is not None
        seq = 12
        prompt = [fresh + i for i in range(big * self.model.block_size)]
        self.call("add_seq", seq, prompt)
        self.prompts.append(prompt)
        self.touched.add(seq)
        self.prefill(seq, 64)
        self.call("free", seq)  # its full blocks become cached, tail first
        self.freed.add(seq)

    @rule(seq=CacheMachine.seqs, layer=st.integers(0, 2), size=st.sampled_from(["one block too many", "every block"]), longest=st.booleans())
    @step
    def sized_to_the_pool(self, seq: int, layer: int, size: str, longest: bool) -> None:
        """An append sized by the model to the blocks an append can take, free plus cached (copies counted):
        one block more runs out with nothing changed; exactly all of them fits, evicting every cached block."""
        assert self.model is not None
        model, li = self.model, layer % self.model.n_layers
        available = model.num_free_blocks()
        limit = (len(model.group_tables[model.group_of[li]][seq]) + available + 3) * model.block_size
        room = limit - (len(self.declared(seq)) - model.seq_len(seq, li))
        if room > 0:
            self.call("extend", seq, [9] * room)  # declare enough tokens (a token no prompt has)

        def needed(tokens: int) -> int:
            return model_blocks_needed(model, seq, li, tokens)

        blocks = available + 1 if size == "one block too many" else available
        tokens = tokens_needing(needed, blocks, limit, longest)
        if tokens is None:
            return
        self.touched.add(seq)
        error = self.write(seq, li, tokens)
        if size == "one block too many":
            assert_equal(f"the model's error for append({seq}, {li}) of {tokens} positions", type(error).__name__, ModelOutOfBlocks.__name__, "one block more than free and cached")

    # -- every observable, and recomputation ------------------------------------------------------

    @invariant()
    @step
    def served_values_are_recomputed_values(self) -> None:
        """Every position of every touched sequence holds what recomputing it from its tokens gives."""
        assert self.model is not None
        touched = sorted(self.touched & set(self.model.tables))
        harness.ask_ahead(self.cache, (("gather", (s, layer)) for s in touched for layer in range(self.model.n_layers)))
        for s in touched:
            for layer in range(self.model.n_layers):
                got_k, got_v = self.cache.gather(s, layer)
                want_k, want_v = recompute(self.declared(s), 0, self.model.seq_len(s, layer), layer, self.model.n_kv_heads, self.model.d_head)
                assert_same_bits(f"gather({s}, {layer}) k, against recomputing it", got_k, want_k, f"gather({s}, {layer})")
                assert_same_bits(f"gather({s}, {layer}) v, against recomputing it", got_v, want_v, f"gather({s}, {layer})")

    @invariant()
    @step
    def cached_blocks_have_no_holder(self) -> None:
        """used == the distinct blocks of the live tables, so no cached block is in a table; the counts add up."""
        assert self.model is not None
        harness.ask_ahead(self.cache, [("stats", ()), ("num_free_blocks", ())])
        held = {b for table in self.model.tables.values() for b in table}  # the model's: the cache's are compared with them
        stats = self.cache.stats()
        assert_equal("stats()['used']", stats["used"], len(held), "stats() against the live tables")
        assert_equal("free + used + cached", stats["free"] + stats["used"] + stats["cached"], self.model.num_blocks, "stats()")
        assert_equal("num_free_blocks()", self.cache.num_free_blocks(), stats["free"] + stats["cached"], "num_free_blocks()")

    # CacheMachine's rules that write drawn chunks (values no prefix gives) are not used here.
    append_chunk = forward_step = append_sized_to_the_pool = fork_and_diverge = None  # type: ignore[assignment]


class PrefixFaultMachine(PrefixMachine):
    """PrefixMachine plus the new bad inputs, at any state; each raises its contract type and changes nothing."""

    @rule(seq=CacheMachine.seqs, call=st.sampled_from(["add_seq of a new id", "extend"]), at=st.integers(0, 5), bad=st.sampled_from([-1, -(2**40)]))
    @step
    def negative_token(self, seq: int, call: str, at: int, bad: int) -> None:
        tokens = [1, 2, 0, 1, 2]
        tokens.insert(at, bad)
        if call == "extend":
            self.call("extend", seq, tokens, pinned=ValueError)
        else:
            assert self.model is not None
            new_id = next(i for i in range(13, 100) if i not in self.model.tables)
            self.call("add_seq", new_id, tokens, pinned=ValueError)

    @rule(seq=st.sampled_from([13, 14, -1, 2**40]), which=st.integers(0, 7), freed=st.booleans())
    @step
    def extend_of_a_dead_id(self, seq: int, which: int, freed: bool) -> None:
        """extend of an id never added, or of one freed and not added again: KeyError."""
        assert self.model is not None
        dead = sorted(self.freed - set(self.model.tables))
        if freed and dead:
            seq = dead[which % len(dead)]
        self.call("extend", seq, [1], pinned=KeyError)

    @rule(seq=CacheMachine.seqs, prompt=PROMPTS)
    @step
    def add_seq_of_a_live_id(self, seq: int, prompt: list[int]) -> None:
        self.call("add_seq", seq, prompt, pinned=ValueError)


