"""`WindowMachine` and `WindowPrefixMachine`: the cache and prefix machines with a sliding window on.

The same rules, invariants and comparisons as `CacheMachine` and `PrefixMachine`, on an
implementation and an oracle both made with `sliding_window=W` (CONTRACT.md "Sliding window"),
W drawn from 2 to 9 (10 to 16 one example in five) beside blocks of 1 to 4 positions, so that a block is let go
within a few appends (an engine's blocks of 8 to 32 and 4 layers, as the other machines draw them now and then,
halved the examples that release a block; the geometry vectors run those with W up to 4,096) and a prompt's hit can skip its first blocks. After every step the tables (released
entries -1 included), stats and the touched sequences' gathers (the window) are the oracle's.

`WindowPrefixMachine` replaces two of PrefixMachine's invariants by their windowed forms rather
than editing them there: a derandomised machine draws its examples from its class's source, and
PrefixMachine's coverage floors were measured on its present source (machines.coverage).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, multiple

from tests import harness
from tests.assertions import assert_equal, assert_same_bits
from tests.strategies import Geometry

from .cache import CacheMachine, step
from .prefix import PROMPTS, SMALL_GEOMETRY, PrefixMachine, recompute

# W - 1 positions kept: from one to more than two blocks of up to 4, and one example in five W = 10 to 16 (a port
# whose window goes wrong from W = 10 on; the vectors take W to 4,096)
WINDOWS = st.integers(1, 5).flatmap(lambda i: st.integers(10, 16) if i == 5 else st.integers(2, 9))


class WindowMachine(CacheMachine):
    """CacheMachine's calls on caches with a sliding window."""

    @initialize(target=CacheMachine.seqs, geometry=SMALL_GEOMETRY, n_seqs=st.integers(1, 3), window=WINDOWS)
    @step
    def new_cache(self, geometry: Geometry, n_seqs: int, window: int) -> Any:  # type: ignore[override]
        """A cache of the drawn geometry and window, with sequences 0 .. n_seqs-1 added."""
        module = self.wire.impl()
        self.model = harness.model(*geometry, sliding_window=window)
        self.cache = module.PagedKVCache(*geometry, sliding_window=window)
        harness.adopt(self.cache, self.model)
        for s in range(n_seqs):
            self.call("add_seq", s)
        return multiple(*range(n_seqs))


class WindowPrefixMachine(PrefixMachine):
    """PrefixMachine's calls on caches with prefix caching and a sliding window."""

    @initialize(target=CacheMachine.seqs, geometry=SMALL_GEOMETRY, prompt=PROMPTS, window=WINDOWS)
    @step
    def new_cache(self, geometry: Geometry, prompt: list[int], window: int) -> Any:  # type: ignore[override]
        """Both caches with prefix caching and the window on, and sequence 0 with a prompt, prefilled."""
        module = self.wire.impl()
        self.model = harness.model(*geometry, prefix_caching=True, sliding_window=window)
        self.cache = module.PagedKVCache(*geometry, prefix_caching=True, sliding_window=window)
        assert_equal("the model's window", self.model.window, window, "harness.model")
        harness.adopt(self.cache, self.model)
        self.call("add_seq", 0, prompt)
        self.prompts.append(prompt)
        self.prefill(0, 64)
        return multiple(0)

    # PrefixMachine's invariants of the same names, for a table with -1 entries and a gather of the window.

    @invariant()
    @step
    def served_values_are_recomputed_values(self) -> None:
        """Every position a touched sequence gathers, the window, holds what recomputing it from its tokens gives."""
        assert self.model is not None
        window = int(self.model.window or 0)  # this machine's caches always have one
        touched = sorted(self.touched & set(self.model.tables))
        harness.ask_ahead(self.cache, (("gather", (s, layer)) for s in touched for layer in range(self.model.n_layers)))
        for s in touched:
            for layer in range(self.model.n_layers):
                length = self.model.seq_len(s, layer)
                start = max(0, length - window + 1)
                want = recompute(self.declared(s), start, length, layer, self.model.n_kv_heads, self.model.d_head)
                for name, got, w in zip("kv", self.cache.gather(s, layer), want):
                    assert_same_bits(f"gather({s}, {layer}) {name}, against recomputing positions {start} .. {length - 1}", got, w, f"gather({s}, {layer})")

    @invariant()
    @step
    def cached_blocks_have_no_holder(self) -> None:
        """used == the distinct blocks (not -1) of the live tables, so no cached block is in a table; the counts add up."""
        assert self.model is not None
        harness.ask_ahead(self.cache, [("stats", ()), ("num_free_blocks", ())])
        held = {b for table in self.model.tables.values() for b in table} - {-1}  # the model's, compared with the cache's
        stats = self.cache.stats()
        assert_equal("stats()['used']", stats["used"], len(held), "stats() against the live tables, -1 entries apart")
        assert_equal("free + used + cached", sum(stats[k] for k in ("free", "used", "cached")), self.model.num_blocks, "stats()")
        assert_equal("num_free_blocks()", self.cache.num_free_blocks(), stats["free"] + stats["cached"], "num_free_blocks()")
