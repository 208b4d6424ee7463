"""`HybridMachine` and `HybridPrefixMachine`: the cache and prefix machines on hybrid models.

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
from hypothesis.stateful import initialize, invariant, multiple

from tests import harness
from tests.assertions import assert_equal, assert_same_bits
from tests.strategies import Geometry, geometries

from .cache import CacheMachine, step
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
