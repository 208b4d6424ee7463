"""The seam between the walk and the implementation under test: calls, answers, observations, ports.

One layout of a state's observables (`reads`): both ports read a state in that order, a port's
`expect` gives the oracle's values in it, and `messages.py` names a difference by it. The records are
typed tuples (NamedTuple: made as fast as a tuple, millions of times a walk, and read by name). An
`Observation` holds a port's values in its own form (a driver's answers as text, a module's as
Python values) and the block tables apart, since tables are compared by the profile's checker
(exactly, or up to a renaming of ids).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, NamedTuple, Protocol, Sequence

from oracle.model import ModelKVCache

from .alphabet import Geometry

Call = tuple[str, tuple[Any, ...]]  # a method and its arguments
Answer = tuple[str, Any]  # ("ok", add_seq's id or None) or ("err", the error's kind)
CLOSED: Sequence[int] = ("closed",)  # type: ignore[assignment]  # the live ids of a closed cache: observe it closed
STATS = ("free", "used", "cached", "evictions")  # stats()'s keys, in the order an observation holds them


class Read(NamedTuple):
    """One observable: the call that reads it."""

    method: str
    args: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"{self.method}({', '.join(map(str, self.args))})"

    @property
    def table_key(self) -> Any:
        """A block_table's key in `Observation.tables`: `s` (group 0's), or `(s, layer)` (another group's)."""
        return self.args[0] if len(self.args) == 1 else self.args


def reads(live: Sequence[int], n_layers: int) -> tuple[Read, ...]:
    """The reads whose answers are an observation's values, in order: stats, the free count, then for
    each live sequence its table (group 0's) and each layer's length and gather. A closed cache is read
    by stats and the free count only (each refused)."""
    return _reads(tuple(live), n_layers) if live is not CLOSED else _CLOSED_READS


def group_reads(live: Sequence[int], group_layers: Sequence[int]) -> tuple[Read, ...]:
    """A hybrid model's other groups' tables, read after `reads` and held in `Observation.tables` only:
    `block_table(s, layer)` for each live s and the first layer of each group after group 0."""
    return () if live is CLOSED else _group_reads(tuple(live), tuple(group_layers))


_CLOSED_READS = (Read("stats"), Read("num_free_blocks"))


@functools.lru_cache(maxsize=4096)  # a walk asks again and again for the same few live sets
def _reads(live: tuple[int, ...], n_layers: int) -> tuple[Read, ...]:
    out = list(_CLOSED_READS)
    for s in live:
        out.append(Read("block_table", (s,)))
        for layer in range(n_layers):
            out += [Read("seq_len", (s, layer)), Read("gather", (s, layer))]
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _group_reads(live: tuple[int, ...], group_layers: tuple[int, ...]) -> tuple[Read, ...]:
    return tuple(Read("block_table", (s, layer)) for s in live for layer in group_layers)


class Observation(NamedTuple):
    """A state as a port shows it: `values`, one per `reads` in the port's form (`wire`: a driver's
    answers as text; else Python values); `tables`, the block ids by `Read.table_key`."""

    values: tuple[Any, ...]
    tables: Mapping[Any, list[int]]
    wire: bool


class Item(NamedTuple):
    """A call the model accepts, to be made on a copy of a state's cache: `live`, the ids to observe after
    it; `keep`, whether the copy is kept (a node of the next depth)."""

    method: str
    args: tuple[Any, ...]
    live: Sequence[int]
    keep: bool


class Outcome(NamedTuple):
    """An Item made: its answer, the observation after it, and the copy when kept (else None)."""

    answer: Answer
    observation: Observation
    cache: Any


Refusals = tuple[list[Answer], Observation]  # the refused calls' answers, one after another, then one observation


class Port(Protocol):
    """The implementation under test as the walk sees it (`ports.ModulePort`, `driver_port.DriverPort`).
    A cache is the port's own handle on one (an object, or a driver's handle number). Calls are made in
    batches, so that a driver can be sent them pipelined: `succeeded` makes each item on its own copy of
    the state (with `own`, the last on the state's own cache), the copies first, so that every copy is of
    the state as its `path` left it; `refused` makes the calls one after another on the state's own cache,
    then observes it once. The `_async` forms send now and answer when called."""

    @property
    def name(self) -> str: ...

    @property
    def note(self) -> str: ...  # what the verdict says of how copies were made ("" for nothing)

    def bound(self, g: Geometry) -> "Port": ...  # this port for caches of geometry g (a walk's own)

    def new(self, g: Geometry) -> Any: ...

    def replay(self, path: Sequence[Call]) -> Any: ...  # a fresh cache with the calls of `path` made on it

    def copy(self, cache: Any, path: Sequence[Call]) -> Any: ...  # a copy of `cache`, which `path` made

    def discard(self, cache: Any) -> None: ...

    def call(self, cache: Any, method: str, args: tuple[Any, ...]) -> Answer: ...

    def observe(self, cache: Any, live: Sequence[int]) -> Observation: ...

    def refused(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> Refusals: ...

    def refused_async(self, cache: Any, calls: Sequence[Call], live: Sequence[int]) -> Callable[[], Refusals]: ...

    def succeeded(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> list[Outcome]: ...

    def succeeded_async(self, cache: Any, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> Callable[[], list[Outcome]]: ...

    def expect(self, model: ModelKVCache, live: Sequence[int]) -> tuple[Any, ...]: ...  # the oracle's values, in this port's form

    def stop(self) -> None: ...
