"""`CacheMachine`: the implementation and the dictionary-of-lists oracle, driven with the same valid calls.

The machine drives the implementation under test (`harness.impl().PagedKVCache`) and
`oracle.ModelKVCache` side by side. Every call is made on the model first: if the model
raises, the implementation must raise the corresponding type and change nothing
observable; if it succeeds, so must the implementation. After every step the invariant
compares stats, free counts, every live table (ids included), every length and every
live sequence's gathered K and V, bit for bit, and checks that what the cache hands out
is never a view of its own memory.

Rule arguments are small and printable (a seed, a dtype name, a token count), and every
chunk is built from them inside the rule, so the steps Hypothesis prints for a failure
are a script that replays it. Layer arguments are taken modulo the drawn number of
layers (the note printed with each append shows the call actually made). Before those
steps, a failure shows the requests the cache received, in the wire protocol, with the
first answer that differs (`machines.report`).

It covers add, fork, append (one layer, chunks of 1 to more than two blocks at any
offset), whole forward steps, free, OutOfBlocks at exactly one block short and appends
that run out on their own. Teardown frees everything, checks that every block came back,
closes, and checks that every call after close raises ValueError.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    rule,
)

from tests import harness, kernel_pages
from tests.assertions import assert_equal, assert_raises, assert_same_bits, assert_served
from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks
from tests.strategies import INPUT_DTYPES, Geometry, engine_geometries, geometries, make_chunk, model_blocks_needed, now_and_then, tokens_needing

from . import coverage, observe, report


GEOMETRY = now_and_then(geometries(), engine_geometries())  # an engine's geometry one example in five
SEQ_IDS = st.integers(0, 11)  # ids 12 and above are never added
LAYERS = st.integers(0, 2)  # taken modulo n_layers
TOKENS = st.one_of(st.integers(1, 2), st.integers(1, 4), st.integers(1, 13))
SEEDS = st.integers(0, 2**16)
DTYPES = st.sampled_from(INPUT_DTYPES)


def step(method: Callable[..., Any]) -> Callable[..., Any]:
    """Mark the machine unhealthy while a rule or invariant runs, so teardown skips its checks after a failure;
    a failure gets the requests the cache received as a note (on Hypothesis's final run)."""

    @functools.wraps(method)
    def wrapper(self: "CacheMachine", *args: Any, **kwargs: Any) -> Any:
        self.healthy = False
        try:
            result = method(self, *args, **kwargs)
        except BaseException as exc:
            self.wire.annotate(exc, type(self).__name__)
            raise
        self.healthy = True
        self.observed.stepped(self.model)
        return result

    return wrapper


def shown(args: tuple[Any, ...]) -> str:
    """A call's arguments for a message: arrays by dtype and shape (printing their values cost a third of a
    prefix machine's run)."""
    return ", ".join(f"<{a.dtype} array {list(a.shape)}>" if isinstance(a, np.ndarray) else repr(a) for a in args)


seqs = Bundle("seqs")  # live sequence ids: add_seq and fork put them in, free takes them out


class CacheMachine(RuleBasedStateMachine):
    """The implementation and the oracle, driven with the same valid calls."""

    seqs = seqs

    def __init__(self) -> None:
        super().__init__()
        self.cache: Any = None
        self.model: ModelKVCache | None = None
        self.healthy = True
        self.touched: set[int] = set()
        self.verified = False  # the step's last call was refused and every observable compared after it
        self.freed: set[int] = set()
        self.page_tables: bool | None = None  # whether the implementation announces page tables (asked once)
        self.observed = observe.Observer()  # the behaviours this example reaches, for its coverage
        harness.begin_example()
        self.wire = report.WireReport()

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def live(self) -> list[int]:
        assert self.model is not None
        return sorted(self.model.tables)

    def call(self, name: str, *args: Any, pinned: type[BaseException] | None = None) -> Any:
        """Make the call on the model, then on the cache; an error must be the same kind and change nothing:
        every observable of the cache after it (every live sequence's gathers too) is then the model's, which
        the error left as it was (and the invariant, next, has nothing left to compare).

        With `pinned`, the model must raise that type (the contract's row for the fault).
        Returns the cache's result (the model's is kept in `self.wanted`), or the model's exception.
        """
        self.verified = False
        seen = self.observed.before(self.model, name, args)
        try:
            want = getattr(self.model, name)(*args)
        except Exception as exc:  # noqa: BLE001 - every model error is matched below
            self.observed.after(self.model, seen, exc)
            if pinned is not None:
                assert_equal(f"the model's error for {name}({shown(args)})", type(exc).__name__, pinned.__name__, "the contract's row for the fault")
            if not harness.sent_ahead(self.cache, name, args, exc):
                assert_raises(harness.expected_error(exc), f"{name}({shown(args)})", lambda: getattr(self.cache, name)(*args))
            self.check_matches_model(self.live, when=f", after the refused {name}({shown(args)})"[:200])
            self.verified = True
            return exc
        if pinned is not None:
            raise AssertionError(f"the model's {name}{args!r} returned {want!r}, but should raise {pinned.__name__} [the contract's row for the fault]")
        self.observed.after(self.model, seen, want)
        self.wanted = want
        if harness.sent_ahead(self.cache, name, args, want):
            return want  # the driver's answer is checked against it with the next call
        got = getattr(self.cache, name)(*args)
        if name in ("seq_len",):
            assert_equal(f"{name}{args!r}", got, want, f"{name}{args!r}")
        elif name == "add_seq":
            assert_served(got, want, f"{name}{args!r}")
        return got

    def touch_with_sharers(self, seq: int) -> None:
        """Gather `seq` after this step, and every live sequence that shares a block with it now."""
        assert self.model is not None
        self.touched.add(seq)
        for tables in self.model.group_tables:  # every group's (one, but for a hybrid model)
            blocks = set(tables.get(seq, ()))
            self.touched.update(s for s, table in tables.items() if blocks.intersection(table))

    def layer(self, layer: int) -> int:
        assert self.model is not None
        return layer % self.model.n_layers

    def append(self, seq: int, layer: int, k: np.ndarray, v: np.ndarray) -> BaseException | None:
        """One append on both; returns the model's error if it ran out (the cache must have too)."""
        assert self.model is not None
        note(f"cache.append({seq}, {layer}, k, v)  # k, v: {k.dtype} {list(k.shape)}, free {self.model.num_free_blocks()}")
        self.touch_with_sharers(int(seq))
        held: dict[str, Any] = {}
        if seq in self.model.tables and 0 <= layer < self.model.n_layers:
            harness.ask_ahead(self.cache, [("gather", (seq, layer)), ("block_table", (seq,))])
            held = {"gather": self.cache.gather(seq, layer), "table": self.cache.block_table(seq)}
            held["copies"] = tuple(a.copy() for a in held["gather"]), held["table"].copy()
        k_in, v_in = k.copy(), v.copy()
        result = self.call("append", seq, layer, k, v)
        written = f"append({seq}, {layer}, k, v)"
        assert_equal("k after it was appended", k, k_in, f"{written}: an append never changes its inputs")
        assert_equal("v after it was appended", v, v_in, f"{written}: an append never changes its inputs")
        if held:
            for name, got, kept in zip("kv", held["gather"], held["copies"][0]):
                assert_same_bits(f"gather({seq}, {layer}) {name} returned before it", got, kept, f"{written}: a later write never changes an earlier gather")
            assert_equal(f"block_table({seq}) returned before it", held["table"].tolist(), held["copies"][1].tolist(), f"{written}: a later write never changes it")
        return result if isinstance(result, BaseException) else None

    # -- set-up -------------------------------------------------------------------------------------

    @initialize(target=seqs, geometry=GEOMETRY, n_seqs=st.integers(1, 3))
    @step
    def new_cache(self, geometry: Geometry, n_seqs: int) -> Any:
        """A cache of the drawn geometry, with sequences 0 .. n_seqs-1 added (so every rule has one to work on)."""
        module = self.wire.impl()
        assert_equal("issubclass(OutOfBlocks, RuntimeError)", issubclass(module.OutOfBlocks, RuntimeError), True, "the module's OutOfBlocks")
        self.model = harness.model(*geometry)
        self.cache = module.PagedKVCache(*geometry)
        harness.adopt(self.cache, self.model)
        for s in range(n_seqs):
            self.call("add_seq", s)
        return multiple(*range(n_seqs))

    # -- sequences ----------------------------------------------------------------------------------

    @rule(target=seqs, seq=SEQ_IDS)
    @step
    def add_seq(self, seq: int) -> Any:
        """A new sequence; an id that is live must be refused with ValueError."""
        assert self.model is not None
        if seq in self.model.tables:
            self.call("add_seq", seq, pinned=ValueError)
            return multiple()
        self.call("add_seq", seq)
        self.touched.add(seq)
        return seq

    @rule(target=seqs, parent=seqs, child=SEQ_IDS)
    @step
    def fork(self, parent: int, child: int) -> Any:
        """The child shares every block; a live child id (the parent's own included) is refused."""
        return self.do_fork(parent, child)

    def do_fork(self, parent: int, child: int) -> Any:
        assert self.model is not None
        if child in self.model.tables:
            self.call("fork", parent, child, pinned=ValueError)
            return multiple()
        before = self.model.stats()  # the cache's too: the last invariant compared them
        self.call("fork", parent, child)
        assert_equal("stats() after a fork", self.cache.stats(), before, f"fork({parent}, {child})")
        self.touched.update((parent, child))
        return child

    @rule(target=seqs, parent=seqs, child=SEQ_IDS, layer=LAYERS, tokens=TOKENS, seed=SEEDS, dtype=DTYPES)
    @step
    def fork_and_diverge(self, parent: int, child: int, layer: int, tokens: int, seed: int, dtype: str) -> Any:
        """Beam search's pattern: fork, then append to the child at once (copy on write of the shared
        partial block, and new blocks past it, in position order)."""
        result = self.do_fork(parent, child)
        if not isinstance(result, int):
            return result
        k, v = make_chunk(self.model.n_kv_heads, tokens, self.model.d_head, seed, dtype)
        self.append(child, self.layer(layer), k, v)
        return child

    @rule(seq=consumes(seqs))
    @step
    def free(self, seq: int) -> None:
        self.touch_with_sharers(seq)
        self.call("free", seq)
        self.freed.add(seq)

    # -- data -----------------------------------------------------------------------------------------

    @rule(seq=seqs, layer=LAYERS, tokens=TOKENS, seed=SEEDS, dtype=DTYPES, tricky=st.booleans(), numpy_ints=st.booleans())
    @step
    def append_chunk(self, seq: int, layer: int, tokens: int, seed: int, dtype: str, tricky: bool, numpy_ints: bool) -> None:
        """One layer, 1 to more than two blocks, from wherever that layer's length is; may run out.

        With `numpy_ints`, the id and layer are passed as NumPy integers (which are integers).
        """
        k, v = make_chunk(self.model.n_kv_heads, tokens, self.model.d_head, seed, dtype, tricky)
        li = self.layer(layer)
        if numpy_ints:
            self.append(np.int64(seq), np.int32(li), k, v)  # type: ignore[arg-type]
        else:
            self.append(seq, li, k, v)

    @rule(seq=seqs, tokens=st.integers(1, 3), seed=SEEDS, dtype=DTYPES, tricky=st.booleans(), layers=st.integers(1, 3))
    @step
    def forward_step(self, seq: int, tokens: int, seed: int, dtype: str, tricky: bool, layers: int) -> None:
        """A forward pass: each layer in order gets its chunk (the first `layers` of them; all when it is >= n_layers).

        Stops at the first layer that runs out, as a scheduler would, leaving layers at different lengths.
        """
        assert self.model is not None
        for li in range(min(layers, self.model.n_layers)):
            k, v = make_chunk(self.model.n_kv_heads, tokens, self.model.d_head, seed + li, dtype, tricky)
            if self.append(seq, li, k, v) is not None:
                break

    @rule(seq=seqs, layer=LAYERS, size=st.sampled_from(["one block too many", "every free block"]), longest=st.booleans(), seed=SEEDS, dtype=DTYPES)
    @step
    def append_sized_to_the_pool(self, seq: int, layer: int, size: str, longest: bool, seed: int, dtype: str) -> None:
        """An append sized by the model (copies on write counted) to the free blocks: the fewest or most tokens that

        - need exactly one block more than is free: OutOfBlocks, and nothing changes;
        - need exactly every free block: it fits (if no token count needs exactly that, one token, which runs out).
        """
        assert self.model is not None
        li = self.layer(layer)
        model = self.model
        free = model.num_free_blocks()
        limit = (len(model.group_tables[model.group_of[li]][seq]) + free + 3) * model.block_size

        def needed(tokens: int) -> int:
            return model_blocks_needed(model, seq, li, tokens)

        if size == "one block too many":
            tokens = tokens_needing(needed, free + 1, limit, longest)
            if tokens is None:  # needs grow by at most one per block touched, from at most one: never
                raise AssertionError(f"tokens needing {free + 1} blocks=None, but should be a count [the model's sizing of append({seq}, {li})]")
        else:
            tokens = tokens_needing(needed, free, limit, longest) or 1
        k, v = make_chunk(self.model.n_kv_heads, tokens, self.model.d_head, seed, dtype)
        error = self.append(seq, li, k, v)
        if size == "one block too many":
            assert_equal(f"the model's error for append({seq}, {li}) of {tokens} positions", type(error).__name__, ModelOutOfBlocks.__name__, "one block more than is free")

    # -- reads ------------------------------------------------------------------------------------------

    @rule(seq=seqs, layer=LAYERS)
    @step
    def read_back(self, seq: int, layer: int) -> None:
        """gather, seq_len (with and without the default layer) and block_table agree with the model."""
        li = self.layer(layer)
        self.touched.add(seq)
        length = self.call("seq_len", seq, li)
        if li == 0:
            assert_equal(f"seq_len({seq})", self.call("seq_len", seq), length, f"seq_len({seq}) and seq_len({seq}, 0)")
        got, want = self.cache.gather(seq, li), self.model.gather(seq, li)  # type: ignore[union-attr]
        for name, g, w in zip("kv", got, want):
            assert_same_bits(f"gather({seq}, {li}) {name}", g, w, f"gather({seq}, {li})")

    # -- invariants ---------------------------------------------------------------------------------------

    @invariant()
    @step
    def matches_model(self) -> None:
        assert self.model is not None
        if self.verified:  # compared after the refused call that ended the step: nothing changed since
            self.verified = False
            return
        self.check_matches_model(sorted(self.touched & set(self.model.tables)))

    def check_matches_model(self, touched: list[int], when: str = "") -> None:
        """The cache's observables are the model's: stats, free counts, every live table and length, and the
        gathers of `touched` and, when it announces them, their page tables for kernels (`kernel_pages`); what
        the cache hands out is not a view of its memory."""
        assert self.model is not None
        reads = harness.Reads()
        stats = harness.assert_matches_model(self.cache, self.model, seqs=touched, when=when, reads=reads)
        assert_equal("stats() keys", sorted(stats), ["cached", "evictions", "free", "used"], f"stats(){when}")
        assert_equal("stats() types", [type(stats[k]).__name__ for k in sorted(stats)], ["int"] * 4, f"stats(){when}")
        assert_equal("free + used + cached", stats["free"] + stats["used"] + stats["cached"], self.model.num_blocks, f"stats(){when}")
        if self.page_tables is None:
            self.page_tables = kernel_pages.announced()
        if self.page_tables:
            mine = sorted(self.touched.intersection(touched))  # after a refused call every live one is compared: not here
            kernel_pages.assert_page_tables(self.cache, self.model, mine, when, reads.gathers)
        if not harness.is_wire():  # a driver's arrays are decoded afresh: aliasing is the Python surface's
            self.check_not_views(touched, reads)
        self.touched.clear()

    def check_not_views(self, seqs: list[int], reads: harness.Reads) -> None:
        """Scribbling on what gather and block_table returned (in `reads`, just compared with the model) changes
        nothing in the cache, and what they return next shares no memory with it."""
        assert self.model is not None
        for s in seqs:
            table = reads.tables[s]
            if table.size:
                table[...] = -7
            again = self.cache.block_table(s)
            assert_equal(f"block_table({s}) shares memory with the array it returned before", np.shares_memory(table, again), False, f"block_table({s})")
            assert_equal(f"block_table({s}) after changing the array it returned", again.tolist(), self.model.block_table(s).tolist(), f"block_table({s})")
            for li in range(self.model.n_layers):
                (k, v), (want_k, want_v) = reads.gathers[s, li]
                if k.size:
                    k[...] = 3.0
                    v[...] = -5.0
                k2, v2 = self.cache.gather(s, li)
                shared = [pair for pair, a, b in (("k, k", k, k2), ("v, v", v, v2), ("k, v", k, v)) if np.shares_memory(a, b)]
                assert_equal(f"arrays of two gather({s}, {li}) that share memory", shared, [], f"gather({s}, {li})")
                assert_same_bits(f"gather({s}, {li}) k after changing the arrays it returned", k2, want_k, f"gather({s}, {li})")
                assert_same_bits(f"gather({s}, {li}) v after changing the arrays it returned", v2, want_v, f"gather({s}, {li})")

    # -- teardown -------------------------------------------------------------------------------------

    def teardown(self) -> None:
        if self.cache is None:
            return
        coverage.record(self.observed.reached)
        if not self.healthy:  # a step failed; that failure is the report, not what teardown would find
            self.cache.close()
            return
        self.free_everything_and_close()

    @step
    def free_everything_and_close(self) -> None:
        assert self.model is not None
        harness.assert_matches_model(self.cache, self.model)  # every live sequence's gathers, once more
        for s in self.live:
            self.call("free", s)
        assert_equal("stats() after freeing every sequence", self.cache.stats(), self.model.stats(), "stats()")
        assert_equal("num_free_blocks() after freeing every sequence", self.cache.num_free_blocks(), self.model.num_blocks, "num_free_blocks()")
        self.cache.close()
        self.cache.close()  # a second close does nothing
        k, v = make_chunk(self.model.n_kv_heads, 1, self.model.d_head, 0, "float32")
        after_close = [
            ("add_seq", (0,)), ("fork", (0, 1)), ("append", (0, 0, k, v)), ("gather", (0, 0)),
            ("seq_len", (0,)), ("seq_len", (0, 0)), ("block_table", (0,)), ("free", (0,)),
            ("stats", ()), ("num_free_blocks", ()),
        ]
        for name, args in after_close:
            assert_raises(ValueError, f"{name}{args!r} after close()", lambda: getattr(self.cache, name)(*args))


