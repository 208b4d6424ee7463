"""Prefix caching (CONTRACT.md "Prefix caching (opt-in)"), model-checked like the rest.

`TestPrefixMachine` and `TestPrefixFaultMachine` run the machines of `machines.prefix`:
prompts drawn from a three-token alphabet (so prefixes really repeat), hits, extends with
appends, forks, frees, preemptions, long prompts that force evictions and requests with
samples or beams (a hit, a fork and a copy on write together), with every observable compared
after every step and every gathered position against recomputing it from its tokens
(`recompute`), so a hit never returns data that a different prefix wrote. Their coverage is
measured and floored as the other machines' (`machines.coverage`). The prose
properties follow the machines, and the toy decoder shows the equivalence the feature rests on.

Skipped for an implementation without the capability (a driver that does not announce
`prefix_caching`): the contract makes it opt-in.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import harness
from assertions import assert_equal, assert_same_bits
from machines import PROMPTS, SETTINGS, PrefixFaultMachine, PrefixMachine, floored, recompute, small_geometry
from oracle import ContiguousKVCache, ToyDecoder
from strategies import Geometry

pytestmark = pytest.mark.needs("prefix_caching")

TestPrefixMachine = pytest.mark.stateful(floored(PrefixMachine))
TestPrefixMachine.settings = SETTINGS
TestPrefixFaultMachine = pytest.mark.stateful(floored(PrefixFaultMachine))
TestPrefixFaultMachine.settings = SETTINGS


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
