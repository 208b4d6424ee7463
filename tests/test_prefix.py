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

from tests import harness
from tests.assertions import assert_equal, assert_same_bits
from tests.machines import PROMPTS, SETTINGS, PrefixFaultMachine, PrefixMachine, floored, recompute, small_geometry
from oracle import ContiguousKVCache, ModelKVCache, ToyDecoder
from tests.programs import InStep, attempt, refused, run
from tests.strategies import Geometry

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
    pair = (cache, model)
    run(pair, "add_seq", 0, [1, 2, 3])
    for call, args, error in (("extend", (0, [4, -1]), ValueError), ("extend", (7, [1]), KeyError), ("add_seq", (1, [0, -3]), ValueError)):
        refused(pair, error, call, *args)
    run(pair, "add_seq", 2, [1, 2, 3, 4])  # a prompt nothing was written for
    ones = np.ones((1, 3, 1), np.float16)
    run(pair, "extend", 0, [4])
    harness.assert_matches_model(cache, model)
    if not caching:  # no declared-token limit when off
        run(pair, "append", 0, 0, ones, ones)
        run(pair, "append", 0, 0, ones, ones)
        harness.assert_matches_model(cache, model)


@pytest.mark.python_surface
@pytest.mark.parametrize("tokens", [[1, 2.0], [True], ["1"], [None], 5], ids=["float", "bool", "str", "None", "not a list"])
def test_non_integer_token_ids_raise_type_error(tokens: Any) -> None:
    cache = harness.impl().PagedKVCache(4, 2, 1, 1, 1, prefix_caching=True)
    model = harness.model(4, 2, 1, 1, 1, prefix_caching=True)
    run((cache, model), "add_seq", 0, [1])
    refused((cache, model), TypeError, "add_seq", 1, tokens)
    refused((cache, model), TypeError, "extend", 0, tokens)
    harness.assert_matches_model(cache, model, when=", after add_seq and extend with bad tokens")


# -- the properties in prose -------------------------------------------------------------------------

# A serving workload: (prompt, free it afterwards?) per request; prompts share prefixes often.
WORKLOAD = st.lists(st.tuples(PROMPTS, st.booleans()), min_size=1, max_size=10)


def serve(pair: tuple[Any, ModelKVCache], workload: list[tuple[list[int], bool]], heads: int, dims: int, layers: int,
          check: Any = None) -> list[int]:
    """Each request, on the cache and the model in step (`run`): add_seq with its prompt, then prefill what was not
    served, layer by layer, with recomputed values; then free it, or keep it. Running out (the model's
    OutOfBlocks, and the cache's with it) ends a request early (it is freed). Returns the live ids."""
    live = []
    for seq, (prompt, done) in enumerate(workload):
        hits = run(pair, "add_seq", seq, prompt)
        for layer in range(layers):
            if len(prompt) > hits and isinstance(attempt(pair, "append", seq, layer, *recompute(prompt, hits, len(prompt), layer, heads, dims)), BaseException):
                done = True
                break
        if check is not None:
            check([*live, seq])
        if done:
            run(pair, "free", seq)
        else:
            live.append(seq)
        if check is not None:
            check(live)
    return live


@given(geometry=small_geometry(), workload=WORKLOAD)
def test_a_hit_never_returns_data_a_different_prefix_wrote(geometry: Geometry, workload: list[tuple[list[int], bool]]) -> None:
    """Every position of every live sequence holds what recomputing it from its own prompt gives (and the model's)."""
    harness.begin_example()
    cache = harness.impl().PagedKVCache(*geometry, prefix_caching=True)
    model = harness.model(*geometry, prefix_caching=True)

    def check(live: list[int]) -> None:
        harness.assert_matches_model(cache, model, seqs=live)
        for s in live:
            for layer in range(geometry.n_layers):
                got = cache.gather(s, layer)
                want = recompute(workload[s][0], 0, model.seq_len(s, layer), layer, geometry.n_kv_heads, geometry.d_head)
                for name, g, w in zip("kv", got, want):
                    assert_same_bits(f"gather({s}, {layer}) {name}", g, w, f"gather({s}, {layer}) after serving {workload[: s + 1]}")

    serve((cache, model), workload, geometry.n_kv_heads, geometry.d_head, geometry.n_layers, check)
    cache.close()


@given(geometry=small_geometry(), workload=WORKLOAD)
def test_caching_on_or_off_never_changes_a_gathered_value(geometry: Geometry, workload: list[tuple[list[int], bool]]) -> None:
    """The same workload on a cache with the option on and one with it off (a pool large enough for both):
    every live sequence gathers the same bits, though the tables differ."""
    harness.begin_example()
    big = geometry._replace(num_blocks=sum(len(p) // geometry.block_size + 1 for p, _ in workload))
    on, model_on = harness.impl().PagedKVCache(*big, prefix_caching=True), harness.model(*big, prefix_caching=True)
    off, model_off = harness.impl().PagedKVCache(*big), harness.model(*big)
    shape = (geometry.n_kv_heads, geometry.d_head, geometry.n_layers)
    live_on, live_off = serve((on, model_on), workload, *shape), serve((off, model_off), workload, *shape)
    assert_equal("live sequences", live_on, live_off, "serve()")
    assert_equal("the model's evictions, with a pool for everything", model_on.evictions, 0, "serve() with caching on")
    harness.assert_matches_model(on, model_on)
    harness.assert_matches_model(off, model_off)
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
    models = {"on": harness.model(64, 4, 2, 2, 8, prefix_caching=True), "off": harness.model(64, 4, 2, 2, 8)}
    paged = {"on": harness.impl().PagedKVCache(64, 4, 2, 2, 8, prefix_caching=True), "off": harness.impl().PagedKVCache(64, 4, 2, 2, 8)}
    caches: dict[str, Any] = {name: InStep(paged[name], models[name]) for name in paged}  # add_seq's count checked, the model in step
    caches["contiguous"] = ContiguousKVCache(64, 2, 2, 8)
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
    assert_equal("positions served", served, [0, 12, 4, 12], "add_seq of the four prompts, caching on: the scenario's hits")
    for name in ("on", "off"):
        harness.assert_matches_model(paged[name], models[name], when=f", caching {name}")
    kv = harness.first_kv_difference(paged["on"], models["on"], range(1, len(prompts)))
    for name in ("off", "contiguous"):
        where = f"the toy decoder, caching on against {name}" + (f"; the first K or V value that differs: {kv}" if kv else "")
        for seq, ((l_on, ids_on, st_on), (l_x, ids_x, st_x)) in enumerate(zip(results["on"], results[name])):
            assert_equal(f"last prompt logits of {seq}", l_on, l_x, where)
            assert_equal(f"greedy ids of {seq}", ids_on, ids_x, where)
            for i, (a, b) in enumerate(zip(st_on, st_x)):
                assert_equal(f"logits of {seq}'s decode step {i}", a, b, where)
    for seq in range(1, len(prompts)):
        for layer in range(2):
            for name, g, w in zip("kv", paged["on"].gather(seq, layer), paged["off"].gather(seq, layer)):
                assert_same_bits(f"gather({seq}, {layer}) {name}, served then decoded", g, w, "the same with caching off")
