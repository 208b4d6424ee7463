"""The implementation under test as the walk sees it: a Python module (here) or a driver (driver_port.py).

A port makes calls in batches, so that a driver can be sent them pipelined:
  succeeded(cache, path, items, own)  the calls the model made, each on its own copy of the state (with
                                      `own`, the last on the state's own cache); items are (method, args,
                                      live, keep): for each, ((status, result), observation, the copy if
                                      keep else None)
  refused(cache, calls, live)         the calls the model refused, on the state's own cache, one after
                                      another, then one observation: (each call's answer, the observation)
The walk asks for the copies first, so that every copy is of the state as its path left it.
An observation is (every observable but the tables, in the port's own form, {seq: table}); `expect`
gives the first part from the model, in the same form.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np

from oracle.model import ModelKVCache
from oracle.state import gather_bits

from .alphabet import GEOMETRIES, Geometry
from .faithful import difference, restore, snapshot

from .oracle_side import CLOSED, error_kind

Call = tuple[str, tuple[Any, ...]]
Observation = tuple[Any, dict[int, list[int]]]
Item = tuple[str, tuple[Any, ...], Sequence[int], bool]  # a call made: method, args, the live ids after it, keep the copy
Outcome = tuple[tuple[str, Any], Observation, Any]  # its answer, the observation after it, the copy kept (or None)
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

    def call(self, cache: Any, method: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            result = getattr(cache, method)(*args)
        except Exception as exc:  # noqa: BLE001 - every error is compared by kind
            return "err", error_kind(exc, self.oob)
        return "ok", ((0 if result is None else int(result)) if method == "add_seq" else None)

    def refused(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> tuple[list[tuple[str, Any]], Observation]:
        answers = [self.call(cache, method, args) for method, args in calls]
        return answers, self.observe(cache, live)

    def refused_async(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> Callable[[], tuple[list[tuple[str, Any]], Observation]]:
        done = self.refused(cache, calls, live)
        return lambda: done

    def succeeded(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> list[Outcome]:
        out = []
        make = self.copier(cache, path) if len(items) > (1 if own else 0) else None
        for n, (method, args, live, keep) in enumerate(items):
            target = cache if make is None or (own and n == len(items) - 1) else make()
            answer = self.call(target, method, args)
            out.append((answer, self.observe(target, live), target if keep else None))
        return out

    def succeeded_async(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> Callable[[], list[Outcome]]:
        done = self.succeeded(cache, path, items, own)
        return lambda: done

    def observe(self, cache: Any, live: Sequence[int]) -> Observation:
        if live is CLOSED:
            return tuple(self.call(cache, m, ())[1] or "ok" for m in ("stats", "num_free_blocks")), {}
        n_layers = self.g.n_layers
        try:
            stats = cache.stats()
            rest: list[Any] = [tuple(int(stats[k]) for k in ("free", "used", "cached", "evictions")), int(cache.num_free_blocks())]
            tables: dict[Any, list[int]] = {(s, layer): cache.block_table(s, layer).tolist() for s in live for layer in self.g.group_layers}
            for s in live:
                table = cache.block_table(s)
                tables[s] = table.tolist()
                rest.append(table.dtype.str)
                for layer in range(n_layers):
                    rest.append(int(cache.seq_len(s, layer)))
                    for arr in cache.gather(s, layer):
                        rest.append((arr.shape, arr.dtype.char, arr.flags.c_contiguous, arr.tobytes()))
        except Exception as exc:  # noqa: BLE001 - an observation that raises is a difference
            return (f"raised {type(exc).__name__}: {exc}",), {}
        return tuple(rest), tables

    def expect(self, model: ModelKVCache, live: Sequence[int]) -> Any:
        if live is CLOSED:
            return ("invalid_argument", "invalid_argument")
        stats = model.stats()
        rest: list[Any] = [tuple(stats[k] for k in ("free", "used", "cached", "evictions")), model.num_free_blocks()]
        for s in live:
            rest.append(INT32)
            for layer in range(model.n_layers):
                rest.append(model.seq_len(s, layer))
                for raw, shape in gather_bits(model, s, layer):
                    rest.append((shape, "e", True, raw))
        return tuple(rest)

    def stop(self) -> None:
        pass
