"""Prefix caching (CONTRACT.md "Prefix caching (opt-in)"), model-checked like the rest.

`PrefixMachine` drives the implementation and the oracle's model, both made with
`prefix_caching=True`, through prompts drawn from a three-token alphabet (so prefixes
really repeat), hits, extends with appends, forks, frees and long prompts that force
evictions, and compares every observable after every step: stats (cached and evictions
included), every table and length, the touched sequences' gathers, and the hit counts
add_seq returns. `PrefixFaultMachine` adds the new bad inputs.

Every value written is what a real model would compute for that position: a function of
the token ids up to it (`recompute`). So a position served from the cache must hold what
recomputing it gives, which the machines check on every gather: a hit never returns data
that a different prefix wrote. The prose properties follow the machines, and the toy
decoder shows the equivalence the feature rests on.

Skipped for an implementation without the capability (a driver that does not announce
`prefix_caching`): the contract makes it opt-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, consumes, initialize, invariant, multiple, rule

import harness
from assertions import assert_equal, assert_same_bits
from oracle import ContiguousKVCache, ToyDecoder
from oracle import OutOfBlocks as ModelOutOfBlocks
from strategies import Geometry, geometries, model_blocks_needed, tokens_needing
from test_stateful import CacheMachine, step

pytestmark = pytest.mark.needs("prefix_caching")

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


class PrefixMachine(CacheMachine):
    """CacheMachine's calls on caches with prefix caching on, with prompts, extends and evictions."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[list[int]] = []  # every prompt used so far, to draw shared prefixes from

    @initialize(target=CacheMachine.seqs, geometry=small_geometry(), prompt=PROMPTS)
    @step
    def new_cache(self, geometry: Geometry, prompt: list[int]) -> Any:  # type: ignore[override]
        """Both caches with prefix caching on, and sequence 0 with a prompt, prefilled as far as the pool allows."""
        module = harness.impl()
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

    def prefill(self, seq: int, chunk: int) -> None:
        """Every layer, in order, up to the declared tokens, `chunk` positions at a time; stops when the pool runs out."""
        assert self.model is not None
        for layer in range(self.model.n_layers):
            while self.model.seq_len(seq, layer) < len(self.declared(seq)):
                left = len(self.declared(seq)) - self.model.seq_len(seq, layer)
                if self.write(seq, layer, min(chunk, left)) is not None:
                    return

    # -- rules -----------------------------------------------------------------------------------

    @rule(target=CacheMachine.seqs, seq=st.integers(0, 11), base=st.integers(0, 20), keep=st.integers(0, 14), tail=PROMPTS,
          prefill=st.booleans(), chunk=st.integers(1, 9))
    @step
    def add_prompt(self, seq: int, base: int, keep: int, tail: list[int], prefill: bool, chunk: int) -> Any:
        """A prompt that shares the first `keep` tokens of an earlier one (when there is one), then `tail`.

        add_seq returns the positions served from the cache, which must be the model's; with `prefill`
        the rest of the prompt is appended, layer by layer.
        """
        assert self.model is not None
        shared = self.prompts[base % len(self.prompts)][:keep] if self.prompts else []
        prompt = shared + tail
        if seq in self.model.tables:
            self.call("add_seq", seq, prompt, pinned=ValueError)
            return multiple()
        got = self.call("add_seq", seq, prompt)
        assert_equal(f"add_seq({seq}, {prompt})", got, self.wanted, f"add_seq({seq}, {prompt}): the positions served")
        event("add_seq served positions from the cache" if got else "add_seq served nothing")
        self.prompts.append(prompt)
        self.touched.add(seq)
        if prefill:
            self.prefill(seq, chunk)
        return seq

    @rule(seq=CacheMachine.seqs, tokens=st.lists(ALPHABET, min_size=1, max_size=6), layers=st.integers(1, 3))
    @step
    def decode(self, seq: int, tokens: list[int], layers: int) -> None:
        """extend, then a forward step of the new positions over the first `layers` layers."""
        assert self.model is not None
        self.call("extend", seq, tokens)
        self.touched.add(seq)
        for layer in range(min(layers, self.model.n_layers)):
            left = len(self.declared(seq)) - self.model.seq_len(seq, layer)
            if left and self.write(seq, layer, left) is not None:
                break

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
        assert isinstance(error, ValueError), f"the model accepted an append past the declared tokens: {error!r}"

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
        event(f"evictions so far: {'some' if self.model.evictions else 'none'}")

    @rule(seq=CacheMachine.seqs, layer=st.integers(0, 2), size=st.sampled_from(["one block too many", "every block"]), longest=st.booleans())
    @step
    def sized_to_the_pool(self, seq: int, layer: int, size: str, longest: bool) -> None:
        """An append sized by the model to the blocks an append can take, free plus cached (copies counted):
        one block more runs out with nothing changed; exactly all of them fits, evicting every cached block."""
        assert self.model is not None
        model, li = self.model, layer % self.model.n_layers
        available = model.num_free_blocks()
        limit = (len(model.tables[seq]) + available + 3) * model.block_size
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
            assert isinstance(error, ModelOutOfBlocks), f"the model did not run out: {error!r}"

    # -- every observable, and recomputation ------------------------------------------------------

    @invariant()
    @step
    def served_values_are_recomputed_values(self) -> None:
        """Every position of every touched sequence holds what recomputing it from its tokens gives."""
        assert self.model is not None
        for s in sorted(self.touched & set(self.model.tables)):
            for layer in range(self.model.n_layers):
                got_k, got_v = self.cache.gather(s, layer)
                want_k, want_v = recompute(self.declared(s), 0, got_k.shape[1], layer, self.model.n_kv_heads, self.model.d_head)
                assert_same_bits(f"gather({s}, {layer}) k, against recomputing it", got_k, want_k, f"gather({s}, {layer})")
                assert_same_bits(f"gather({s}, {layer}) v, against recomputing it", got_v, want_v, f"gather({s}, {layer})")

    @invariant()
    @step
    def cached_blocks_have_no_holder(self) -> None:
        """used == the distinct blocks of the live tables, so no cached block is in a table; the counts add up."""
        assert self.model is not None
        held = {b for s in self.model.tables for b in self.cache.block_table(s).tolist()}
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


_MACHINE = settings(max_examples=2 * settings().max_examples)
TestPrefixMachine = pytest.mark.stateful(PrefixMachine.TestCase)
TestPrefixMachine.settings = _MACHINE
TestPrefixFaultMachine = pytest.mark.stateful(PrefixFaultMachine.TestCase)
TestPrefixFaultMachine.settings = _MACHINE


@pytest.mark.parametrize("caching", [False, True], ids=["off", "on"])
def test_the_additions_check_their_arguments_on_and_off(caching: bool) -> None:
    """Off, add_seq(s, tokens) serves nothing and extend does nothing, but both check their arguments as on."""
    cache = harness.impl().PagedKVCache(4, 2, 1, 1, 1, prefix_caching=caching)
    model = harness.model(4, 2, 1, 1, 1, prefix_caching=caching)
    for c in (cache, model):
        c.add_seq(0, [1, 2, 3])
    for call, args, error in (("extend", (0, [4, -1]), ValueError), ("extend", (7, [1]), KeyError), ("add_seq", (1, [0, -3]), ValueError)):
        for c in (cache, model):
            with pytest.raises(error):
                getattr(c, call)(*args)
    assert_equal("add_seq(2, [1, 2, 3, 4])", cache.add_seq(2, [1, 2, 3, 4]), model.add_seq(2, [1, 2, 3, 4]), "a prompt nothing was written for")
    ones = np.ones((1, 3, 1), np.float16)
    for c in (cache, model):
        c.extend(0, [4])
    harness.assert_matches_model(cache, model)
    if not caching:  # no declared-token limit when off
        for c in (cache, model):
            c.append(0, 0, ones, ones)
            c.append(0, 0, ones, ones)
        harness.assert_matches_model(cache, model)


@pytest.mark.python_surface
@pytest.mark.parametrize("tokens", [[1, 2.0], [True], ["1"], [None], 5], ids=["float", "bool", "str", "None", "not a list"])
def test_non_integer_token_ids_raise_type_error(tokens: Any) -> None:
    cache = harness.impl().PagedKVCache(4, 2, 1, 1, 1, prefix_caching=True)
    cache.add_seq(0, [1])
    before = harness.snapshot(cache, [0], 1)
    for call in (lambda: cache.add_seq(1, tokens), lambda: cache.extend(0, tokens)):
        with pytest.raises(TypeError):
            call()
    assert_equal("the cache after refused calls", harness.snapshot(cache, [0], 1), before, "add_seq and extend with bad tokens")


# -- the properties in prose -------------------------------------------------------------------------

# A serving workload: (prompt, free it afterwards?) per request; prompts share prefixes often.
WORKLOAD = st.lists(st.tuples(PROMPTS, st.booleans()), min_size=1, max_size=10)


def serve(cache: Any, workload: list[tuple[list[int], bool]], heads: int, dims: int, layers: int, check: Any = None) -> list[int]:
    """Each request: add_seq with its prompt, then prefill what was not served, layer by layer, with recomputed
    values; then free it, or keep it. OutOfBlocks ends a request early (it is freed). Returns the live ids."""
    live = []
    for seq, (prompt, done) in enumerate(workload):
        hits = cache.add_seq(seq, prompt)
        try:
            for layer in range(layers):
                if len(prompt) > hits:
                    cache.append(seq, layer, *recompute(prompt, hits, len(prompt), layer, heads, dims))
        except harness.impl().OutOfBlocks:
            done = True
        if check is not None:
            check(cache, [*live, seq])
        if done:
            cache.free(seq)
        else:
            live.append(seq)
        if check is not None:
            check(cache, live)
    return live


def counts_add_up(cache: Any, live: list[int], num_blocks: int) -> None:
    """free + used + cached == N, and used is exactly the blocks live tables hold (so no cached block has a holder)."""
    stats = cache.stats()
    held = {b for s in live for b in cache.block_table(s).tolist()}
    assert_equal("free + used + cached", stats["free"] + stats["used"] + stats["cached"], num_blocks, "stats()")
    assert_equal("stats()['used']", stats["used"], len(held), "stats() against the live tables")


@given(geometry=small_geometry(), workload=WORKLOAD)
def test_a_hit_never_returns_data_a_different_prefix_wrote(geometry: Geometry, workload: list[tuple[list[int], bool]]) -> None:
    """Every position of every live sequence holds what recomputing it from its own prompt gives."""
    harness.begin_example()
    cache = harness.impl().PagedKVCache(*geometry, prefix_caching=True)

    def check(cache: Any, live: list[int]) -> None:
        counts_add_up(cache, live, geometry.num_blocks)
        for s in live:
            for layer in range(geometry.n_layers):
                got = cache.gather(s, layer)
                want = recompute(workload[s][0], 0, got[0].shape[1], layer, geometry.n_kv_heads, geometry.d_head)
                for name, g, w in zip("kv", got, want):
                    assert_same_bits(f"gather({s}, {layer}) {name}", g, w, f"gather({s}, {layer}) after serving {workload[: s + 1]}")

    serve(cache, workload, geometry.n_kv_heads, geometry.d_head, geometry.n_layers, check)
    cache.close()


@given(geometry=small_geometry(), workload=WORKLOAD)
def test_caching_on_or_off_never_changes_a_gathered_value(geometry: Geometry, workload: list[tuple[list[int], bool]]) -> None:
    """The same workload on a cache with the option on and one with it off (a pool large enough for both):
    every live sequence gathers the same bits, though the tables differ."""
    harness.begin_example()
    big = geometry._replace(num_blocks=sum(len(p) // geometry.block_size + 1 for p, _ in workload))
    on = harness.impl().PagedKVCache(*big, prefix_caching=True)
    off = harness.impl().PagedKVCache(*big)
    shape = (geometry.n_kv_heads, geometry.d_head, geometry.n_layers)
    live_on, live_off = serve(on, workload, *shape), serve(off, workload, *shape)
    assert_equal("live sequences", live_on, live_off, "serve()")
    assert_equal("evictions with a pool for everything", on.stats()["evictions"], 0, "stats()")
    for s in live_on:
        for layer in range(geometry.n_layers):
            for name, g, w in zip("kv", on.gather(s, layer), off.gather(s, layer)):
                assert_same_bits(f"gather({s}, {layer}) {name} with caching on", g, w, f"gather({s}, {layer}) with it off")
    on.close()
    off.close()


@pytest.mark.floats
def test_decoding_with_caching_on_gives_the_logits_and_ids_of_decoding_with_it_off() -> None:
    """The toy decoder over prompts that share prefixes: with caching on, served positions are not computed
    again, yet logits and greedy ids equal, bit for bit, those with caching off and from the contiguous cache
    (the decoder's rows do not depend on how many share a call), and every served position holds the bits
    recomputing it gives."""
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=3)
    system = [5, 9, 14, 2, 33, 7, 7, 21, 40, 1, 8, 19]  # a shared system prompt, three blocks of 4
    prompts = [system + [3, 4], system + [3, 4, 60], system[:6] + [11], system + [50, 51, 52, 53, 54]]
    caches = {
        "on": harness.impl().PagedKVCache(64, 4, 2, 2, 8, prefix_caching=True),
        "off": harness.impl().PagedKVCache(64, 4, 2, 2, 8),
        "contiguous": ContiguousKVCache(64, 2, 2, 8),
    }
    results: dict[str, list[Any]] = {name: [] for name in caches}
    served = []
    for name, cache in caches.items():
        for seq, prompt in enumerate(prompts):
            if name == "contiguous":
                cache.add_seq(seq)
                hits = 0
            else:
                hits = cache.add_seq(seq, prompt)
            if name == "on":
                served.append(hits)
            logits = decoder.forward(cache, seq, prompt[hits:])
            ids, steps = [], []
            token = int(np.argmax(logits[-1]))
            for _ in range(4):
                if name == "on":
                    cache.extend(seq, [token])
                out = decoder.forward(cache, seq, [token])[-1]
                token = int(np.argmax(out))
                ids.append(token)
                steps.append(out)
            results[name].append((logits[-1], ids, steps))
            if seq == 0 and name == "on":
                cache.free(0)  # its blocks stay cached for the others
    assert served == [0, 12, 4, 12], f"positions served: {served}"
    for name in ("off", "contiguous"):
        for seq, ((l_on, ids_on, st_on), (l_x, ids_x, st_x)) in enumerate(zip(results["on"], results[name])):
            assert_equal(f"last prompt logits of {seq}", l_on, l_x, f"caching on against {name}")
            assert_equal(f"greedy ids of {seq}", ids_on, ids_x, f"caching on against {name}")
            for i, (a, b) in enumerate(zip(st_on, st_x)):
                assert_equal(f"logits of {seq}'s decode step {i}", a, b, f"caching on against {name}")
    for seq in range(1, len(prompts)):
        for layer in range(2):
            for name, g, w in zip("kv", caches["on"].gather(seq, layer), caches["off"].gather(seq, layer)):
                assert_same_bits(f"gather({seq}, {layer}) {name}, served then decoded", g, w, "the same with caching off")
