"""A Python module as the walk's port (`observation.Port`); a driver's is driver_port.py.

Each state's cache is made by replaying its calls on a fresh cache, or (opt-in) copied by a copier and
every so often checked against a replay. An observation's values are Python values, in `reads` order.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np

from oracle.model import ModelKVCache
from oracle.state import gather_bits

from .alphabet import GEOMETRIES, Geometry
from .faithful import difference, restore, snapshot
from .observation import CLOSED, STATS, Answer, Call, Item, Observation, Outcome, Read, Refusals, group_reads, reads
from .oracle_side import error_kind

Copier = Callable[[Any], Callable[[], Any]]  # a cache -> a function that makes a copy of it as it is now
INT32 = np.dtype(np.int32).str  # a block table's dtype, as an observation holds it ('<i4')
CHECK_EVERY = 100  # a module port with a copier compares copy 1, 101, 201, ... of each walk with a replay of its calls


class UnfaithfulCopy(Exception):
    """A copy of a state's cache differs from the same calls replayed on a fresh cache."""


def call_text(method: str, args: tuple[Any, ...]) -> str:
    """A call in a few words: arrays by their shape."""
    shown = [f"<{'x'.join(map(str, a.shape))} array>" if hasattr(a, "shape") else repr(a) for a in args]
    return f"{method}({', '.join(shown)})"


def snapshots(cache: Any) -> Callable[[], Any]:
    """A Copier: the cache pickled once (`faithful.snapshot`), each copy restored from that. It carries
    the cache object and what it reaches, never state the module keeps outside it: opt-in only."""
    snap = snapshot(cache)
    return lambda: restore(snap)


def each_copy(copy_one: Callable[[Any], Any]) -> Copier:
    """A Copier from a function that copies a cache (copy.deepcopy, say)."""
    return lambda cache: lambda: copy_one(cache)


class ModulePort:
    """A Python module exporting PagedKVCache and OutOfBlocks. By default every state's cache is made as a
    driver's is: a fresh cache with the state's calls replayed into it, so whatever the port keeps outside
    the cache object (a module-level table keyed by the cache, say) is made too, and every printed claim
    holds of the calls as a user makes them. With a `copier` (`snapshots`: opt-in, for a port whose state
    is all in the object), copies are made by it instead, every `check_every`-th checked field by field
    against a replay (UnfaithfulCopy when they differ); a copier that raises falls back to replays."""

    def __init__(self, module: Any, copier: Copier | None = None, check_every: int = CHECK_EVERY) -> None:
        self.module = module
        self.check_every = check_every
        self.name = getattr(module, "__name__", "?")
        self.oob = module.OutOfBlocks
        # Shared by every bound view: how copies are made, and why they are not (for the verdict).
        self.shared: dict[str, Any] = {"copier": copier, "note": ""}
        self.copies = 0  # this view's (one walk's): the count that picks the copies checked
        self.g: Geometry = GEOMETRIES[0]  # set by bound()

    @property
    def can_copy(self) -> bool:
        return self.shared["copier"] is not None

    def stop_copying(self, why: str) -> None:
        """From now on every copy is a replay; `why` goes to the verdict."""
        self.shared["copier"] = None
        self.shared["note"] = why

    @property
    def note(self) -> str:
        return str(self.shared["note"])

    def bound(self, g: Geometry) -> "ModulePort":
        """This port, for caches of geometry g (a walk's own)."""
        view = copy.copy(self)
        view.g = g
        view.copies = 0
        return view

    def new(self, g: Geometry) -> Any:
        return self.module.PagedKVCache(*g.sizes, **g.options)

    def replay(self, path: Sequence[Call]) -> Any:
        """A fresh cache with the calls of `path` made on it."""
        fresh = self.new(self.g)
        for method, args in path:
            self.call(fresh, method, args)
        return fresh

    def copier(self, cache: Any, path: Sequence[Call]) -> Callable[[], Any]:
        """What makes copies of `cache` (which `path` made) as it is now, each sampled one checked."""
        copier = self.shared["copier"]
        make: Callable[[], Any] = lambda: self.replay(path)  # noqa: E731
        if copier is not None:
            try:
                make = copier(cache)
            except Exception as exc:  # noqa: BLE001 - a cache that cannot be copied is replayed instead
                self.stop_copying(f"{self.name}'s cache cannot be copied ({type(exc).__name__}: {exc}): every state was replayed from the root")

        def made() -> Any:
            twin = make()
            if self.shared["copier"] is not None:
                self.copies += 1
                if (self.copies - 1) % self.check_every == 0:
                    self.check(twin, path)
            return twin

        return made

    def copy(self, cache: Any, path: Sequence[Call]) -> Any:
        """A copy of `cache`, which `path` made."""
        return self.copier(cache, path)()

    def check(self, twin: Any, path: Sequence[Call]) -> None:
        """UnfaithfulCopy unless the copy `twin` is, field for field, the cache the calls of `path` make."""
        problem = difference(twin, self.replay(path))
        if problem is not None:
            calls = "; ".join(call_text(m, a) for m, a in path) or "no call"
            raise UnfaithfulCopy(f"a copy of {self.name}'s cache after {calls} is not what the same calls make on a fresh cache: {problem}")

    def discard(self, cache: Any) -> None:
        pass

    def call(self, cache: Any, method: str, args: tuple[Any, ...]) -> Answer:
        try:
            result = getattr(cache, method)(*args)
        except Exception as exc:  # noqa: BLE001 - every error is compared by kind
            return "err", error_kind(exc, self.oob)
        return "ok", ((0 if result is None else int(result)) if method == "add_seq" else None)

    def refused(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> Refusals:
        answers = [self.call(cache, method, args) for method, args in calls]
        return answers, self.observe(cache, live)

    def refused_async(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> Callable[[], Refusals]:
        done = self.refused(cache, calls, live)
        return lambda: done

    def succeeded(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> list[Outcome]:
        out = []
        make = self.copier(cache, path) if len(items) > (1 if own else 0) else None
        for n, item in enumerate(items):
            target = cache if make is None or (own and n == len(items) - 1) else make()
            answer = self.call(target, item.method, item.args)
            out.append(Outcome(answer, self.observe(target, item.live), target if item.keep else None))
        return out

    def succeeded_async(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> Callable[[], list[Outcome]]:
        done = self.succeeded(cache, path, items, own)
        return lambda: done

    def observe(self, cache: Any, live: Sequence[int]) -> Observation:
        if live is CLOSED:
            return Observation(tuple(self.call(cache, r.method, r.args)[1] or "ok" for r in reads(live, 0)), {}, wire=False)
        tables: dict[Any, list[int]] = {}
        try:
            values = tuple(self.read(cache, r, tables) for r in reads(live, self.g.n_layers))
            for r in group_reads(live, self.g.group_layers):
                self.read(cache, r, tables)
        except Exception as exc:  # noqa: BLE001 - an observation that raises is a difference
            return Observation((f"raised {type(exc).__name__}: {exc}",), {}, wire=False)
        return Observation(values, tables, wire=False)

    @staticmethod
    def read(cache: Any, r: Read, tables: dict[Any, list[int]]) -> Any:
        """One read's value; a table's ids go to `tables`, its dtype is the value."""
        if r.method == "gather":
            return tuple((a.shape, a.dtype.char, a.flags.c_contiguous, a.tobytes()) for a in cache.gather(*r.args))
        if r.method == "seq_len":
            return int(cache.seq_len(*r.args))
        if r.method == "block_table":
            table = cache.block_table(*r.args)
            tables[r.table_key] = table.tolist()
            return table.dtype.str
        if r.method == "stats":
            stats = cache.stats()
            return tuple(int(stats[k]) for k in STATS)
        return int(cache.num_free_blocks())

    def expect(self, model: ModelKVCache, live: Sequence[int]) -> tuple[Any, ...]:
        if live is CLOSED:
            return ("invalid_argument", "invalid_argument")
        return tuple(self.expected(model, r) for r in reads(live, model.n_layers))

    @staticmethod
    def expected(model: ModelKVCache, r: Read) -> Any:
        """The oracle's value of one read, as `read` gives the port's."""
        if r.method == "gather":
            return tuple((shape, "e", True, raw) for raw, shape in gather_bits(model, *r.args))
        if r.method == "seq_len":
            return model.seq_len(*r.args)
        if r.method == "block_table":
            return INT32
        if r.method == "stats":
            stats = model.stats()
            return tuple(stats[k] for k in STATS)
        return model.num_free_blocks()

    def stop(self) -> None:
        pass
