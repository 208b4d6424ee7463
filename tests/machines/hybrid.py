"""`HybridMachine` and `HybridPrefixMachine`: the cache and prefix machines on hybrid models (`HybridEngine*`: on
engines' layouts, below).

The same rules, invariants and comparisons as `CacheMachine` and `PrefixMachine`, on an
implementation and an oracle both made with `layer_windows` (CONTRACT.md "Hybrid models"): two or
three layers, at least one of them full attention or of another window than the rest, so that
there are two groups (three sometimes), windows of 2 to 7 positions on blocks of 1 to 4 and pools
of a few blocks, so that a window group lets blocks go within a few calls while the full-attention
group keeps them, a prompt's hit is cut to what every group can serve, and appends are refused with
every group's table unchanged. After every step every group's table (`block_table(s, layer)`, by
`harness.assert_matches_model`), the stats and the touched sequences' gathers (each layer's own
window) are the oracle's.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, multiple, rule

from tests import harness
from tests.assertions import assert_equal, assert_same_bits
from tests.strategies import Geometry, geometries, make_chunk

from .cache import SEEDS, CacheMachine, step
from .prefix import PROMPTS, PrefixMachine, recompute

# Up to three layers' windows (None: full attention); `layer_windows` takes the first n_layers, made hybrid.
PATTERNS = st.lists(st.none() | st.integers(2, 7), min_size=3, max_size=3)
HYBRID_GEOMETRY = geometries(num_blocks=st.one_of(st.integers(2, 6), st.integers(6, 20)), block_sizes=st.integers(1, 4)).map(
    lambda g: g._replace(n_layers=max(2, g.n_layers))
)


def hybrid(pattern: list[int | None], n_layers: int) -> tuple[int | None, ...]:
    """The first n_layers windows of `pattern`, with the last layer's changed when they are all one window (a full
    attention layer after windowed ones, a window of 2 after full attention): at least two groups."""
    windows = list(pattern[:n_layers])
    if len(set(windows)) == 1:
        windows[-1] = None if windows[0] is not None else 2
    return tuple(windows)


class HybridMachine(CacheMachine):
    """CacheMachine's calls on hybrid caches."""

    @initialize(target=CacheMachine.seqs, geometry=HYBRID_GEOMETRY, n_seqs=st.integers(1, 3), pattern=PATTERNS)
    @step
    def new_cache(self, geometry: Geometry, n_seqs: int, pattern: list[int | None]) -> Any:  # type: ignore[override]
        """A cache of the drawn geometry and layers' windows, with sequences 0 .. n_seqs-1 added."""
        module = self.wire.impl()
        windows = hybrid(pattern, geometry.n_layers)
        self.model = harness.model(*geometry, layer_windows=windows)
        self.cache = module.PagedKVCache(*geometry, layer_windows=windows)
        harness.adopt(self.cache, self.model)
        for s in range(n_seqs):
            self.call("add_seq", s)
        return multiple(*range(n_seqs))


class HybridPrefixMachine(PrefixMachine):
    """PrefixMachine's calls on hybrid caches with prefix caching on."""

    @initialize(target=CacheMachine.seqs, geometry=HYBRID_GEOMETRY, prompt=PROMPTS, pattern=PATTERNS)
    @step
    def new_cache(self, geometry: Geometry, prompt: list[int], pattern: list[int | None]) -> Any:  # type: ignore[override]
        """Both caches with prefix caching and the layers' windows, and sequence 0 with a prompt, prefilled."""
        module = self.wire.impl()
        windows = hybrid(pattern, geometry.n_layers)
        self.model = harness.model(*geometry, prefix_caching=True, layer_windows=windows)
        self.cache = module.PagedKVCache(*geometry, prefix_caching=True, layer_windows=windows)
        assert_equal("the model's groups", len(self.model.group_windows) > 1, True, "harness.model")
        harness.adopt(self.cache, self.model)
        self.call("add_seq", 0, prompt)
        self.prompts.append(prompt)
        self.prefill(0, 64)
        return multiple(0)

    # PrefixMachine's invariants of the same names, for every group's table and each layer's window.

    @invariant()
    @step
    def served_values_are_recomputed_values(self) -> None:
        """Every position a touched sequence gathers, each layer's window, holds what recomputing it from its tokens gives."""
        assert self.model is not None
        touched = sorted(self.touched & set(self.model.tables))
        harness.ask_ahead(self.cache, (("gather", (s, layer)) for s in touched for layer in range(self.model.n_layers)))
        for s in touched:
            for layer in range(self.model.n_layers):
                length, window = self.model.seq_len(s, layer), self.model.layer_windows[layer]
                start = 0 if window is None else max(0, length - window + 1)
                want = recompute(self.declared(s), start, length, layer, self.model.n_kv_heads, self.model.d_head)
                for name, got, w in zip("kv", self.cache.gather(s, layer), want):
                    assert_same_bits(f"gather({s}, {layer}) {name}, against recomputing positions {start} .. {length - 1}", got, w, f"gather({s}, {layer})")

    @invariant()
    @step
    def cached_blocks_have_no_holder(self) -> None:
        """used == the distinct blocks (not -1) of every group's live tables, so no cached block is in a table; the
        counts add up."""
        assert self.model is not None
        harness.ask_ahead(self.cache, [("stats", ()), ("num_free_blocks", ())])
        held = {b for table in self.model.all_tables() for b in table} - {-1}  # the model's, compared with the cache's
        stats = self.cache.stats()
        assert_equal("stats()['used']", stats["used"], len(held), "stats() against every group's live tables, -1 entries apart")
        assert_equal("free + used + cached", sum(stats[k] for k in ("free", "used", "cached")), self.model.num_blocks, "stats()")
        assert_equal("num_free_blocks()", self.cache.num_free_blocks(), stats["free"] + stats["cached"], "num_free_blocks()")


# Hybrid models as engines build them (issue 52): GPT-OSS's and Gemma 2's alternating window and full-attention layers,
# Gemma 3's five local layers to one global over 26 layers (W = 1,024 on B = 16 as it ships, or a window of a few
# positions that releases within a few steps), four groups of three windows whose layers interleave, and a group
# whose layers have full attention between them: a group's layers are seldom adjacent.
def _five_to_one(window: int) -> tuple[int | None, ...]:
    return ((window,) * 5 + (None,)) * 4 + (window, window)


SMALL_WINDOWS = st.integers(2, 7)
LAYOUTS = st.one_of(
    st.tuples(st.sampled_from((1, 2, 8, 16)), st.builds(lambda w, n: (w, None) * n, SMALL_WINDOWS, st.integers(2, 4))),
    st.tuples(st.just(16), st.just(_five_to_one(1024))),
    st.tuples(st.integers(1, 4), st.builds(_five_to_one, SMALL_WINDOWS)),
    st.tuples(st.integers(1, 8), st.builds(lambda a, b, c: (a, None, a + b, a + b + c) * 2, SMALL_WINDOWS, st.integers(1, 3), st.integers(1, 3))),
    st.tuples(st.integers(1, 4), st.builds(lambda w: (w, None, w), SMALL_WINDOWS)),
)
ENGINE_POOLS = st.one_of(st.integers(2, 8), st.integers(8, 40))


class EngineLayout:
    """What the engine-shaped machines share: the drawn layer index 0 .. 2 names one of three layers picked across the
    layout (`picks`: the first, one drawn, the last), and a forward pass covers the first third, two thirds or all
    of the layers, so that a group's layers lag behind the layers between them."""

    picks: tuple[int, int, int] = (0, 0, 0)

    def layer(self, layer: int) -> int:
        return self.picks[layer % 3]

    def pass_layers(self, layers: int, n_layers: int) -> int:
        """The layers a forward pass of `layers` (1 to 3) thirds covers, at least one."""
        return max(1, min(layers, 3) * n_layers // 3)

    def laid_out(self, n_layers: int, middle: int) -> None:
        self.picks = (0, middle % n_layers, n_layers - 1)


class HybridEngineMachine(EngineLayout, HybridMachine):
    """HybridMachine's calls on caches of engines' layouts."""

    @initialize(target=CacheMachine.seqs, layout=LAYOUTS, pool=ENGINE_POOLS, n_seqs=st.integers(1, 3), middle=st.integers(0, 25))
    @step
    def new_cache(self, layout: tuple[int, tuple[int | None, ...]], pool: int, n_seqs: int, middle: int) -> Any:  # type: ignore[override]
        """A cache of the drawn layout (H = D = 1), with sequences 0 .. n_seqs-1 added."""
        block, windows = layout
        geometry = Geometry(pool, block, len(windows), 1, 1)
        self.laid_out(len(windows), middle)
        self.model = harness.model(*geometry, layer_windows=windows)
        self.cache = self.wire.impl().PagedKVCache(*geometry, layer_windows=windows)
        harness.adopt(self.cache, self.model)
        for s in range(n_seqs):
            self.call("add_seq", s)
        return multiple(*range(n_seqs))

    @rule(seq=CacheMachine.seqs, tokens=st.integers(1, 3), seed=SEEDS, layers=st.integers(1, 3))
    @step
    def forward_step(self, seq: int, tokens: int, seed: int, layers: int) -> None:  # type: ignore[override]
        """A forward pass over the first third, two thirds or all of the layers, in order; stops at the first that runs out."""
        assert self.model is not None
        for li in range(self.pass_layers(layers, self.model.n_layers)):
            k, v = make_chunk(1, tokens, 1, seed + li, "float16")
            if self.append(seq, li, k, v) is not None:
                break


class HybridEnginePrefixMachine(EngineLayout, HybridPrefixMachine):
    """HybridPrefixMachine's calls on caches of engines' layouts, prefix caching on."""

    @initialize(target=CacheMachine.seqs, layout=LAYOUTS, pool=ENGINE_POOLS, prompt=PROMPTS, middle=st.integers(0, 25))
    @step
    def new_cache(self, layout: tuple[int, tuple[int | None, ...]], pool: int, prompt: list[int], middle: int) -> Any:  # type: ignore[override]
        """Both caches of the drawn layout with prefix caching, and sequence 0 with a prompt, prefilled."""
        block, windows = layout
        geometry = Geometry(pool, block, len(windows), 1, 1)
        self.laid_out(len(windows), middle)
        self.model = harness.model(*geometry, prefix_caching=True, layer_windows=windows)
        self.cache = self.wire.impl().PagedKVCache(*geometry, prefix_caching=True, layer_windows=windows)
        harness.adopt(self.cache, self.model)
        self.call("add_seq", 0, prompt)
        self.prompts.append(prompt)
        self.prefill(0, 64)
        return multiple(0)

    def decode_tokens(self, seq: int, tokens: list[int], layers: int) -> bool:
        """PrefixMachine's decode step over the first third, two thirds or all of the layers."""
        assert self.model is not None
        return super().decode_tokens(seq, tokens, self.pass_layers(layers, self.model.n_layers))
