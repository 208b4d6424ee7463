"""Bounded exhaustive checking (issue 21): every call sequence up to depth K on tiny pools.

`explore(port, geometry, depth)` walks, breadth first, every sequence of at most `depth`
calls on one tiny geometry, making each call on the oracle (`oracle.ModelKVCache`) and on
the implementation under test, and after each call compares the result or the error kind
and every observable: stats, the free count, every live table, every layer's length and
every layer's gather (bit exact). States are deduplicated by the model's observable state
(tables, lengths, data, declared tokens, the prefix registry and the cached order; block ids
renamed by order of first appearance under `allocation=any`). Breadth first, so the first
failure found is a shortest failing call sequence within the bound; `Failure.transcript()`
writes it in the port's terms, as the wire requests with the oracle's answers.

The calls: add_seq, fork, append with T from 1 to B + 1 in every layer, free, close, and the
error table's bad inputs that a driver can be sent: a bad layer (L and -1), a live child (and
a fork onto itself), unknown ids (every verb that takes one), bad shapes (2-D, k and v shapes
differ, wrong H, wrong D), T = 0, and every call after close. Then two faults in one call, whose
answer CONTRACT.md's "Which error wins" pins: an unknown id with a bad layer or a bad shape, and
an unknown parent onto a live child. With prefix caching: prompts over a two-token vocabulary,
extend by one token, negative tokens (also on an unknown id, and in a live id's add_seq), and
eviction (the pools are tiny).

Cloning instead of replaying from the root: a Python module's cache is deep-copied (a cache
that cannot be is rebuilt by replaying its path; a failure is confirmed on a fresh cache, and
when it does not happen there the copies were not faithful and the walk starts again without
them); a driver holds one cache per state of the frontier, by handle, and a copy is made by
replaying the path into a new handle, with requests pipelined (one state's batch is answered
while the next state's is worked out). An error leaves a correct cache as it was, so the calls
the model refuses from a state are made one after another on the state's own cache, each
answer compared, then the state observed once; if that differs, each refused call is made alone
on a fresh cache to name the one (a refused call that changes the state and a later one that
changes it back would go unseen: the price of one observation instead of one per refused call).
Geometries are walked a depth at a time in turn, so the first failure is a shortest one across
them all.

Tables are compared through one function, `check_tables` (exact by default; `renaming` for
allocation=any), so that another checker can be plugged in.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .codec import call_fields, format_list, format_payload, format_stats, parse_list

Action = tuple[Any, ...]  # ("append", seq, layer, T), ("fork", parent, child), ...
Tables = Mapping[int, Sequence[int]]
# check_tables(want, got, carry, released) -> (what differs or None, the carry for the next step).
# want: the oracle's tables of the live sequences, got: the port's; carry: what the checker keeps
# along one path (None at the root); released: the oracle's block ids whose lifetime ended in this call.
TableCheck = Callable[[Tables, Tables, Any, Sequence[int]], tuple["str | None", Any]]


def oracle(name: str = "oracle") -> Any:
    """The oracle package (the model), imported by name: it is not type-checked (mypy --strict paged wire)."""
    import importlib

    return importlib.import_module(name)


def new_model(g: Geometry, profile: Any) -> Any:
    """The oracle for geometry g under `profile` (an `oracle.profile.Profile`), empty: the one place the
    explorer makes one."""
    return oracle().ModelKVCache(*g.sizes, profile=profile, **({"prefix_caching": True} if g.prefix_caching else {}))


def parse_profile(text: str | None) -> Any:
    """`OPTION=VALUE,...` (docs/CONTRACT.md, Profiles) as an `oracle.profile.Profile`."""
    return oracle("oracle.profile").parse(text or "")


# -- geometries and actions --------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    num_blocks: int
    block_size: int
    n_layers: int
    n_kv_heads: int
    d_head: int
    prefix_caching: bool = False
    seq_ids: tuple[int, ...] = (0, 1, 2)
    vocab: int = 2  # prefix caching: token ids 0 .. vocab-1
    max_prompt: int = -1  # prefix caching: prompts of length 0 .. max_prompt (default B + 1)
    max_depth: int = 0  # walked to depth min(K, max_depth) when set (the state count grows fastest here)

    @property
    def sizes(self) -> tuple[int, int, int, int, int]:
        return (self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head)

    @property
    def name(self) -> str:
        """A short id, as a test's parameter: N3-B2-L2-H1-D1, with -prefix for prefix caching."""
        return "-".join(f"{c}{v}" for c, v in zip("NBLHD", self.sizes)) + ("-prefix" if self.prefix_caching else "")

    def __str__(self) -> str:
        n, b, l, h, d = self.sizes
        return f"N={n} B={b} L={l} H={h} D={d}" + (" prefix_caching" if self.prefix_caching else "") + f" ids {','.join(map(str, self.seq_ids))}"

    def depth(self, k: int) -> int:
        return min(k, self.max_depth) if self.max_depth else k

    def prompts(self) -> list[tuple[int, ...]]:
        top = self.block_size + 1 if self.max_prompt < 0 else self.max_prompt
        return [p for n in range(top + 1) for p in itertools.product(range(self.vocab), repeat=n)]


# The geometries `ci/gate --exhaustive` walks: the (N=3, B=2, L=2, H=D=1, 3 sequence ids);
# two heads and two dims, so a head or a dimension in the wrong place shows; and prefix caching with
# one-position blocks on a pool of two, so that keys, hits, release order and eviction come within a
# few calls: one layer to depth K, two layers (a block full in one layer only) to depth min(K, 5);
# and a pool of three with prompts of up to three tokens of one id, so that a prompt can hit two
# blocks whose ids are not neighbours (a hit on [0] then a block taken after another sequence's).
GEOMETRIES: tuple[Geometry, ...] = (
    Geometry(3, 2, 2, 1, 1),
    Geometry(2, 2, 1, 2, 2, seq_ids=(0, 1)),
    Geometry(2, 1, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1)),
    Geometry(2, 1, 2, 1, 1, prefix_caching=True, seq_ids=(0, 1), max_depth=5),
    Geometry(3, 1, 1, 1, 1, prefix_caching=True, vocab=1, max_prompt=3),
)
BAD_CHUNKS = ("2-D", "shapes differ", "wrong H", "wrong D", "T = 0")


def actions(model: Any, g: Geometry) -> list[Action]:
    """Every call tried from this state: the valid ones and the error table's bad inputs."""
    ids = g.seq_ids
    if model.closed:
        after = [("add_seq", ids[0]), ("fork", ids[0], ids[1]), ("append", ids[0], 0, 1), ("gather", ids[0], 0),
                 ("seq_len", ids[0], 0), ("block_table", ids[0]), ("free", ids[0]), ("stats",), ("num_free_blocks",),
                 ("close",)]
        return after + ([("extend", ids[0], (0,))] if g.prefix_caching else [])
    live = [s for s in ids if s in model.tables]
    dead = [s for s in ids if s not in model.tables]
    out: list[Action] = []
    for s in dead:  # a new sequence; with prefix caching, one for each prompt
        out += [("add_seq", s, p) for p in g.prompts()] if g.prefix_caching else [("add_seq", s)]
    out += [("add_seq", s) for s in live]  # a live id added again
    for p in ids:  # every fork of one id onto another: the child live or not, the parent unknown or not
        for c in ids:
            if p != c and not (p in dead and c in live):  # one fault at most here; two below
                out.append(("fork", p, c))
    out += [("fork", s, s) for s in live]  # onto itself: a live child
    for s in live:
        out += [("append", s, layer, t) for layer in range(g.n_layers) for t in range(1, g.block_size + 2)]
        if g.prefix_caching:
            out += [("extend", s, (tok,)) for tok in range(g.vocab)]
    out += [("free", s) for s in ids]
    for s in dead:  # an unknown id, for every verb that takes one
        out += [("append", s, 0, 1), ("gather", s, 0), ("seq_len", s, 0), ("block_table", s)]
        if g.prefix_caching:
            out.append(("extend", s, (0,)))
    if live:  # bad layers, shapes and tokens, on a live sequence (the first)
        s = live[0]
        out += [("append", s, g.n_layers, 1), ("append", s, -1, 1), ("gather", s, g.n_layers), ("seq_len", s, -1)]
        out += [("bad_chunk", s, kind) for kind in BAD_CHUNKS]
        if g.prefix_caching:
            out.append(("extend", s, (-1,)))
    if g.prefix_caching and dead:
        out.append(("add_seq", dead[0], (0, -1)))
    out += two_faults(live, dead, g)
    out.append(("close",))
    return out


def two_faults(live: list[int], dead: list[int], g: Geometry) -> list[Action]:
    """Calls that break two rules at once (CONTRACT.md "Which error wins": the id first): an unknown id
    (the first) with a bad layer or each bad shape; an unknown parent onto each live child; with prefix
    caching, an unknown id with a negative token and a live id with one."""
    out: list[Action] = []
    if dead:
        s = dead[0]
        out += [("append", s, g.n_layers, 1), ("gather", s, -1), ("seq_len", s, g.n_layers)]
        out += [("bad_chunk", s, kind) for kind in BAD_CHUNKS]
        out += [("fork", s, c) for c in live]
        if g.prefix_caching:
            out.append(("extend", s, (-1,)))
    if g.prefix_caching and live:
        out.append(("add_seq", live[0], (0, -1)))
    return out


@functools.lru_cache(maxsize=4096)
def chunk(g: Geometry, seq: int, layer: int, pos: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The (k, v) an append of T positions from `pos` sends: v = -k; read-only, shared by every call that sends it."""
    k = value(g, seq, layer, pos, t)
    v = -k
    k.setflags(write=False)
    v.setflags(write=False)
    return k, v


@functools.lru_cache(maxsize=64)
def bad_chunk(h: int, d: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The (k, v) of one of the error table's bad shapes (read-only)."""
    shapes = {"2-D": ((h, 1), (h, 1)), "shapes differ": ((h, 1, d), (h, 2, d)), "wrong H": ((h + 1, 1, d),) * 2,
              "wrong D": ((h, 1, d + 1),) * 2, "T = 0": ((h, 0, d),) * 2}[kind]
    k, v = np.ones(shapes[0], np.float16), np.ones(shapes[1], np.float16)
    k.setflags(write=False)
    v.setflags(write=False)
    return k, v


def value(g: Geometry, seq: int, layer: int, pos: int, t: int) -> np.ndarray:
    """K of T positions from `pos` written by `seq` into `layer`: a distinct float16 value for every
    (seq, layer, position, head, dim), exact in float16 (all below 2048)."""
    h, d = g.n_kv_heads, g.d_head
    base = ((seq % 4) * g.n_layers + layer) * 64 + np.arange(pos, pos + t) % 64  # [T]
    grid = (base[None, :, None] * h + np.arange(h)[:, None, None]) * d + np.arange(d)[None, None, :]
    return (1 + grid % 2047).astype(np.float16)


def concrete(action: Action, model: Any, g: Geometry) -> tuple[str, tuple[Any, ...]]:
    """The Python call (method, args) an action is in this state: an append's values depend on its position."""
    verb = action[0]
    h, d = g.n_kv_heads, g.d_head
    if verb == "append":
        _, s, layer, t = action
        pos = len(model.tokens[s][layer]) if (not model.closed and s in model.tables and 0 <= layer < g.n_layers) else 0
        return "append", (s, layer, *chunk(g, s, layer if 0 <= layer < g.n_layers else 0, pos, t))
    if verb == "bad_chunk":
        return "append", (action[1], 0, *bad_chunk(h, d, action[2]))
    if verb in ("add_seq", "extend") and len(action) == 3:
        return verb, (action[1], list(action[2]))
    return verb, tuple(action[1:])


def describe(action: Action) -> str:
    verb = action[0]
    if verb == "append":
        return f"append({action[1]}, {action[2]}, T={action[3]})"
    if verb == "bad_chunk":
        return f"append({action[1]}, 0, bad chunk: {action[2]})"
    if verb in ("add_seq", "extend") and len(action) == 3:
        return f"{verb}({action[1]}, {list(action[2])})"
    return f"{verb}({', '.join(map(str, action[1:]))})"


# -- the model: cloning, errors, the state key ---------------------------------------------------


def clone_model(model: Any) -> Any:
    """A copy of a ModelKVCache that shares only what never changes (its float16 token arrays and the
    registry's data); any attribute it does not know is deep-copied."""
    new = object.__new__(type(model))
    for name, val in model.__dict__.items():
        if name == "tokens":
            val = {s: [list(layer) for layer in layers] for s, layers in val.items()}
        elif name in ("tables", "declared"):
            val = {s: list(x) for s, x in val.items()}
        elif name == "registry":
            val = {key: list(entries) for key, entries in val.items()}
        elif name in ("cached", "release_order", "lifetime", "ended"):
            val = list(val)
        elif name == "profile":
            pass  # frozen
        elif not isinstance(val, (int, float, str, bool, tuple, type(None))):
            val = copy.deepcopy(val)
        new.__dict__[name] = val
    return new


def error_kind(exc: BaseException, out_of_blocks: type[BaseException]) -> str:
    """The wire's KIND of an exception (and type_error, which has no wire form)."""
    if isinstance(exc, out_of_blocks):
        return "out_of_blocks"
    if isinstance(exc, KeyError):
        return "unknown_sequence"
    if isinstance(exc, ValueError):
        return "invalid_argument"
    if isinstance(exc, TypeError):
        return "type_error"
    return f"internal ({type(exc).__name__}: {exc})"


def renaming_of(model: Any) -> dict[int, int]:
    """Block ids renamed 0, 1, 2, ... by order of first appearance: tables (by sequence id), registry, cached."""
    names: dict[int, int] = {}
    for s in sorted(model.tables):
        for b in model.tables[s]:
            names.setdefault(b, len(names))
    for key in sorted(model.registry):
        for b, _ in model.registry[key]:
            names.setdefault(b, len(names))
    for b in model.cached:
        names.setdefault(b, len(names))
    return names


def model_gather(model: Any, s: int, layer: int) -> tuple[tuple[bytes, tuple[int, int, int]], tuple[bytes, tuple[int, int, int]]]:
    """The raw bits (C order) and shape of the model's gather(s, layer), K then V: its tokens joined
    (with one head, no stacking is needed)."""
    toks = model.tokens[s][layer]
    shape = (model.n_kv_heads, len(toks), model.d_head)
    if model.n_kv_heads == 1:
        return (b"".join(k.tobytes() for k, _ in toks), shape), (b"".join(v.tobytes() for _, v in toks), shape)
    k, v = model.gather(s, layer)
    return (k.tobytes(), shape), (v.tobytes(), shape)


def layer_bytes(layer: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    return b"".join(k.tobytes() + v.tobytes() for k, v in layer)


def state_key(model: Any, canonical: bool) -> Any:
    """The model's observable state, hashable; block ids renamed first when `canonical`."""
    if model.closed:
        return ("closed",)
    names = renaming_of(model) if canonical else None

    def rename(b: int) -> int:
        return names[b] if names is not None else b

    seqs = tuple(
        (s, tuple(rename(b) for b in model.tables[s]), tuple(layer_bytes(layer) for layer in model.tokens[s]), tuple(model.declared[s]))
        for s in sorted(model.tables)
    )
    registry = tuple(
        sorted((key, tuple((rename(b), tuple(layer_bytes(layer) for layer in data)) for b, data in entries)) for key, entries in model.registry.items())
    )
    # under reuse=release-order, where each cached block stands among the unheld ones (free ones are alike)
    order = tuple(rename(b) if b in model.cached else -1 for b in model.release_order) if model.profile.reuse == "release-order" else ()
    return (seqs, registry, tuple(rename(b) for b in model.cached), model.evictions, order)


# -- table checkers ---------------------------------------------------------------------------------


def exact_tables(want: Tables, got: Tables, carry: Any, released: Sequence[int]) -> tuple[str | None, Any]:
    """allocation=lowest-free: every table equal, id for id."""
    for s in want:
        if list(got[s]) != list(want[s]):
            return f"block_table({s})={list(got[s])}, but should be {list(want[s])}", carry
    return None, carry


def renaming(want: Tables, got: Tables, carry: Any, released: Sequence[int], *, num_blocks: int) -> tuple[str | None, Any]:
    """allocation=any: tables equal up to a renaming of block ids bound for each block's lifetime
    (`oracle.renaming.BlockNames`). carry: the names along this path, copied at every step (paths branch)."""
    names = carry.copy() if carry is not None else oracle("oracle.renaming").BlockNames(num_blocks)
    for m in released:
        names.release(m)
    for s in sorted(want):
        problem = names.check(f"block_table({s})", list(got[s]), list(want[s]))
        if problem is not None:
            return problem, carry
    return None, names


# -- ports: a Python module, a driver ---------------------------------------------------------------
#
# A port makes calls in batches, so that a driver can be sent them pipelined:
#   refused(cache, calls, live)   the calls the model refused, on the state's own cache, then one observation:
#                                 (each call's (status, result or kind), the observation)
#   succeeded(cache, path, items) the calls the model made, each on its own copy of the state (the last on
#                                 the state's own cache); items are (method, args, live, keep): for each,
#                                 ((status, result), observation, the copy if keep else None)
# An observation is (every observable but the tables, in the port's own form, {seq: table}); `expect`
# gives the first part from the model, in the same form.

Call = tuple[str, tuple[Any, ...]]
Observation = tuple[Any, dict[int, list[int]]]
Item = tuple[str, tuple[Any, ...], Sequence[int], bool]  # a call made: method, args, the live ids after it, keep the copy
Outcome = tuple[tuple[str, Any], Observation, Any]  # its answer, the observation after it, the copy kept (or None)
IN_FLIGHT = 8  # nodes whose requests are sent before the oldest one's answers are read
CLOSED: Sequence[int] = ("closed",)  # type: ignore[assignment]  # observe a closed cache


class ModulePort:
    """A Python module exporting PagedKVCache and OutOfBlocks; a state's cache is deep-copied (or, if
    that fails or is not faithful, rebuilt by replaying its calls)."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.name = getattr(module, "__name__", "?")
        self.can_copy = True
        self.oob = module.OutOfBlocks
        self.g: Geometry = GEOMETRIES[0]  # set by bound()

    def bound(self, g: Geometry) -> "ModulePort":
        """This port, for caches of geometry g (a walk's own)."""
        view = copy.copy(self)
        view.g = g
        return view

    def new(self, g: Geometry) -> Any:
        return self.module.PagedKVCache(*g.sizes, **({"prefix_caching": True} if g.prefix_caching else {}))

    def copy(self, cache: Any, path: Sequence[Call]) -> Any:
        if self.can_copy:
            try:
                return copy.deepcopy(cache)
            except Exception:  # noqa: BLE001 - a cache that cannot be copied is rebuilt instead
                self.can_copy = False
        fresh = self.new(self.g)
        for method, args in path:
            self.call(fresh, method, args)
        return fresh

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

    def succeeded_async(self, cache: Any, path: Sequence[Call], items: Sequence[Item]) -> Callable[[], list[Outcome]]:
        done = self.succeeded(cache, path, items)
        return lambda: done

    def succeeded(self, cache: Any, path: Sequence[Call], items: Sequence[tuple[str, tuple[Any, ...], Sequence[int], bool]]) -> list[tuple[tuple[str, Any], Observation, Any]]:
        out = []
        for n, (method, args, live, keep) in enumerate(items):
            target = cache if n == len(items) - 1 else self.copy(cache, path)
            answer = self.call(target, method, args)
            out.append((answer, self.observe(target, live), target if keep else None))
        return out

    def observe(self, cache: Any, live: Sequence[int]) -> Observation:
        if live is CLOSED:
            return tuple(self.call(cache, m, ())[1] or "ok" for m in ("stats", "num_free_blocks")), {}
        n_layers = self.g.n_layers
        try:
            stats = cache.stats()
            rest: list[Any] = [tuple(int(stats[k]) for k in ("free", "used", "cached", "evictions")), int(cache.num_free_blocks())]
            tables: dict[int, list[int]] = {}
            for s in live:
                table = cache.block_table(s)
                tables[s] = table.tolist()
                rest.append(table.dtype.char == "i" and table.dtype.itemsize == 4)
                for layer in range(n_layers):
                    rest.append(int(cache.seq_len(s, layer)))
                    for arr in cache.gather(s, layer):
                        rest.append((arr.shape, arr.dtype.char, arr.flags.c_contiguous, arr.tobytes()))
        except Exception as exc:  # noqa: BLE001 - an observation that raises is a difference
            return (f"raised {type(exc).__name__}: {exc}",), {}
        return tuple(rest), tables

    def expect(self, model: Any, live: Sequence[int]) -> Any:
        if live is CLOSED:
            return ("invalid_argument", "invalid_argument")
        stats = model.stats()
        rest: list[Any] = [tuple(stats[k] for k in ("free", "used", "cached", "evictions")), model.num_free_blocks()]
        for s in live:
            rest.append(True)
            for layer in range(model.n_layers):
                rest.append(model.seq_len(s, layer))
                for raw, shape in model_gather(model, s, layer):
                    rest.append((shape, "e", True, raw))
        return tuple(rest)

    def stop(self) -> None:
        pass


class DriverPort:
    """A driver (`exec:CMD`): one process, a cache per frontier state, by handle; a copy is a new handle
    with the state's calls replayed into it. The requests of a batch are pipelined (written together,
    answered in order), and answers are compared as text."""


    def __init__(self, spec: str, timeout: float = 30.0) -> None:
        from .client import DriverProcess

        self.spec = spec
        self.process = DriverProcess(spec[len("exec:") :].strip(), timeout)
        self.name = spec
        self.capabilities = self.process.capabilities
        # Shared by every bound view of this port: the handle the next `new` answers (PROTOCOL.md: 0, 1,
        # 2, ...), and the closes of discarded caches, sent with the next batch.
        self.shared: dict[str, Any] = {"handles": 0, "closing": list[str](), "tickets": collections.deque()}
        self.fields: dict[Any, tuple[tuple[Any, ...], str]] = {}
        self.g: Geometry = GEOMETRIES[0]  # set by bound()

    def bound(self, g: Geometry) -> "DriverPort":
        """This port, for caches of geometry g (a walk's own); the process and the handles are shared."""
        view = copy.copy(self)
        view.g = g
        return view

    def exchange(self, lines: list[str]) -> list[str]:
        """The answers to the lines, in order (pipelined)."""
        return self.collect(self.send(lines))

    def send(self, lines: list[str]) -> list[Any]:
        """Write the lines (with the closes queued before them) and return a ticket for their answers: the
        driver answers while the explorer goes on (`DriverProcess.send`, which never blocks on a driver
        that is itself blocked writing answers)."""
        closing: list[str] = self.shared["closing"]
        lines = closing + lines
        ticket: list[Any] = [len(lines), len(closing), None]  # count, how many to skip (the closes), answers
        closing.clear()
        self.shared["tickets"].append(ticket)
        if self.process.dead:
            raise RuntimeError(f"driver {self.spec!r} is no longer usable ({self.process.dead})")
        self.process.send(lines)
        return ticket

    def collect(self, ticket: list[Any]) -> list[str]:
        """The answers of a ticket (reading those of the tickets before it first)."""
        tickets = self.shared["tickets"]
        take = self.process.take
        while ticket[2] is None:
            head = tickets.popleft()
            head[2] = [take() for _ in range(head[0])][head[1] :]
        return ticket[2]  # type: ignore[no-any-return]

    def new_line(self, g: Geometry) -> tuple[str, int]:
        handle: int = self.shared["handles"]
        self.shared["handles"] = handle + 1
        return "new " + " ".join(map(str, g.sizes)) + (" prefix_caching" if g.prefix_caching else ""), handle

    def new(self, g: Geometry) -> int:
        line, handle = self.new_line(g)
        (answer,) = self.exchange([line])
        if answer != f"ok {handle}":
            raise RuntimeError(f"{line!r} answered {answer!r}, expected 'ok {handle}'")
        return handle

    def line(self, handle: int, method: str, args: tuple[Any, ...]) -> str:
        """The request line; its fields are made once per call (an append's arrays are shared, and kept
        here with the fields, so that their ids stay theirs)."""
        key = (method, *(id(a) if isinstance(a, np.ndarray) else tuple(a) if isinstance(a, list) else a for a in args))
        hit = self.fields.get(key)
        if hit is None or any(x is not y for x, y in zip(hit[0], args) if isinstance(y, np.ndarray)):
            hit = self.fields[key] = (args, " ".join(call_fields(method, *args)))
        return f"{method} {handle} {hit[1]}".rstrip()

    def discard(self, handle: int) -> None:
        self.shared["closing"].append(f"close {handle}")

    def observe_lines(self, handle: int, live: Sequence[int]) -> list[str]:
        if live is CLOSED:
            return [f"stats {handle}", f"num_free_blocks {handle}"]
        lines = [f"stats {handle}", f"num_free_blocks {handle}"]
        for s in live:
            lines.append(f"block_table {handle} {s}")
            for layer in range(self.g.n_layers):
                lines += [f"seq_len {handle} {s} {layer}", f"gather {handle} {s} {layer}"]
        return lines

    def observation(self, answers: list[str], live: Sequence[int]) -> Observation:
        if live is CLOSED:
            return tuple(a.split(" ")[1] if a.startswith("err ") else a for a in answers), {}
        rest = answers[:2]
        tables: dict[int, list[int]] = {}
        at = 2
        for s in live:
            answer = answers[at]
            try:
                tables[s] = parse_list(answer[3:]) if answer.startswith("ok ") else [-1]
                rest.append("ok")
            except Exception:  # noqa: BLE001 - an answer that does not parse is shown as it is
                tables[s] = [-1]
                rest.append(answer)
            rest += answers[at + 1 : at + 1 + 2 * self.g.n_layers]
            at += 1 + 2 * self.g.n_layers
        return tuple(rest), tables

    @staticmethod
    def answer(method: str, response: str) -> tuple[str, Any]:
        head, _, rest = response.partition(" ")
        if head == "ok":
            if method == "add_seq":
                try:
                    return "ok", int(rest)
                except ValueError:
                    return "ok", rest
            return "ok", None
        if head == "err":
            return "err", rest.partition(" ")[0]
        return "err", f"out of protocol: {response[:80]!r}"

    def refused(self, handle: int, calls: Sequence[Call], live: Sequence[int]) -> tuple[list[tuple[str, Any]], Observation]:
        return self.refused_async(handle, calls, live)()

    def refused_async(self, handle: int, calls: Sequence[Call], live: Sequence[int]) -> Callable[[], tuple[list[tuple[str, Any]], Observation]]:
        ticket = self.send([self.line(handle, method, args) for method, args in calls] + self.observe_lines(handle, live))

        def done() -> tuple[list[tuple[str, Any]], Observation]:
            answers = self.collect(ticket)
            n = len(calls)
            return [self.answer(m, a) for (m, _), a in zip(calls, answers[:n])], self.observation(answers[n:], live)

        return done

    def succeeded(self, handle: int, path: Sequence[Call], items: Sequence[Item]) -> list[Outcome]:
        return self.succeeded_async(handle, path, items)()

    def succeeded_async(self, handle: int, path: Sequence[Call], items: Sequence[Item]) -> Callable[[], list[Outcome]]:
        lines: list[str] = []
        spans = []
        for n, (method, args, live, keep) in enumerate(items):
            if n == len(items) - 1:
                target = handle
            else:
                new, target = self.new_line(self.g)
                lines.append(new)
                lines += [self.line(target, m, a) for m, a in path]
            at = len(lines)
            lines.append(self.line(target, method, args))
            lines += self.observe_lines(target, live)
            spans.append((target, at, len(lines), n == len(items) - 1))
            if not keep and target != handle:
                lines.append(f"close {target}")
        ticket = self.send(lines)

        def done() -> list[Outcome]:
            answers = self.collect(ticket)
            out: list[Outcome] = []
            for (method, args, live, keep), (target, at, end, last) in zip(items, spans):
                if not last and answers[at - len(path) - 1] != f"ok {target}":
                    raise RuntimeError(f"new answered {answers[at - len(path) - 1]!r}, expected 'ok {target}' (handles must be 0, 1, 2, ...)")
                out.append((self.answer(method, answers[at]), self.observation(answers[at + 1 : end], live), target if keep else None))
            return out

        return done

    def copy(self, handle: int, path: Sequence[Call]) -> int:
        fresh = self.new(self.g)
        self.exchange([self.line(fresh, m, a) for m, a in path])
        return fresh

    def call(self, handle: int, method: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        return self.answer(method, self.exchange([self.line(handle, method, args)])[0])

    def observe(self, handle: int, live: Sequence[int]) -> Observation:
        return self.observation(self.exchange(self.observe_lines(handle, live)), live)

    def expect(self, model: Any, live: Sequence[int]) -> Any:
        if live is CLOSED:
            return ("invalid_argument", "invalid_argument")
        rest = [f"ok {format_stats(model.stats())}", f"ok {model.num_free_blocks()}"]
        for s in live:
            rest.append("ok")
            for layer in range(model.n_layers):
                (k, shape), (v, _) = model_gather(model, s, layer)
                hexes = [np.frombuffer(x, "<u2").astype(">u2").tobytes().hex() or "-" for x in (k, v)]
                rest += [f"ok {shape[1]}", f"ok {shape[1]} {hexes[0]} {hexes[1]}"]
        return tuple(rest)

    def stop(self) -> None:
        if not self.process.dead and self.shared["closing"]:
            self.exchange([])
        self.process.stop()


def port_for(spec: str) -> ModulePort | DriverPort:
    """`exec:CMD` is a driver; anything else names a Python module."""
    if spec.startswith("exec:"):
        return DriverPort(spec)
    import importlib

    return ModulePort(importlib.import_module(spec))


# -- the walk ---------------------------------------------------------------------------------------


@dataclass
class Failure:
    geometry: Geometry
    path: list[Action]  # the calls, the last one the call after which something differs
    what: str
    profile: Any = None  # the oracle.profile.Profile it was found under

    @property
    def calls(self) -> int:
        return len(self.path)

    def __str__(self) -> str:
        return f"{self.calls} calls on {self.geometry}: {'; '.join(map(describe, self.path))}\n  {self.what}"

    def transcript(self, impl: str = "") -> Any:
        """The calls as wire requests, then every observation after the last one, with the oracle's answers."""
        as_impl = oracle("oracle.as_impl")

        from .record import Recorder

        g = self.geometry
        recorder = Recorder()
        profile = self.profile if self.profile is not None else parse_profile("")
        reference = as_impl.under(profile)
        wrapped = recorder.wrap(reference)
        kwargs = {"prefix_caching": True} if g.prefix_caching else {}
        cache = wrapped.PagedKVCache(*g.sizes, **kwargs)
        model = new_model(g, profile)
        for action in self.path:
            method, args = concrete(action, model, g)
            for target in (model, cache):
                try:
                    getattr(target, method)(*args)
                except Exception:  # noqa: BLE001 - refused calls are part of the trace
                    pass
        for method, args in observations(model):
            try:
                getattr(cache, method)(*args)
            except Exception:  # noqa: BLE001
                pass
        meta = {"id": "exhaustive-failure", "comment": f"a shortest failing call sequence ({self.calls} calls on {g}): {self.what}"[:300], "flags": "exhaustive"}
        if impl:
            meta["impl"] = impl
        if g.prefix_caching:
            meta["requires"] = "prefix_caching"
        if str(profile):
            meta["profile"] = str(profile)
        return recorder.transcript(meta, reference)


def observations(model: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The calls that observe a state, in the order the explorer makes them."""
    if model.closed:
        return [("stats", ()), ("num_free_blocks", ())]
    out: list[tuple[str, tuple[Any, ...]]] = [("stats", ()), ("num_free_blocks", ())]
    for s in sorted(model.tables):
        out.append(("block_table", (s,)))
        for layer in range(model.n_layers):
            out += [("seq_len", (s, layer)), ("gather", (s, layer))]
    return out


@dataclass
class Level:
    depth: int
    states: int  # distinct states reached with at most `depth` calls
    transitions: int  # calls checked with at most `depth` calls
    seconds: float


@dataclass
class Result:
    geometry: Geometry
    depth: int
    states: int = 0
    transitions: int = 0
    seconds: float = 0.0
    levels: list[Level] = field(default_factory=list)
    failure: Failure | None = None
    stopped: str = ""  # why the walk ended before its depth (a time limit), else ""
    note: str = ""


@dataclass
class _Node:
    model: Any
    cache: Any
    path: list[Action]
    calls: list[tuple[str, tuple[Any, ...]]]
    carry: Any


class _Checker:
    """What the model says of one call, and whether a port's answer and observation agree with it; the
    expected observations are kept by state key."""

    def __init__(self, port: ModulePort | DriverPort, g: Geometry, canonical: bool, check: TableCheck) -> None:
        ModelOutOfBlocks = oracle().OutOfBlocks

        self.port, self.g, self.canonical, self.check = port, g, canonical, check
        self.model_oob = ModelOutOfBlocks
        self.expected: dict[Any, Any] = {}

    def model_call(self, model: Any, method: str, args: tuple[Any, ...]) -> tuple[str, Any]:
        try:
            result = getattr(model, method)(*args)
        except Exception as exc:  # noqa: BLE001 - the model's refusal, compared by kind
            return "err", error_kind(exc, self.model_oob)
        return "ok", int(result) if method == "add_seq" else None

    def verdict(self, model: Any, key: Any, obs: Observation, carry: Any, before: int) -> tuple[str | None, Any]:
        """What differs between the port's observation and the model's state, or None; and the carry."""
        live = live_of(model)
        want = self.expected.get(key)
        if want is None:
            want = self.expected[key] = self.port.expect(model, live)
        got, tables = obs
        if got != want:
            return first_difference(got, want, model, live), carry
        if model.closed:
            return None, carry
        released = model.ended[before:]  # the oracle's blocks whose lifetime ended in this call
        return self.check({s: model.tables[s] for s in live}, tables, carry, released)

    def step(self, cache: Any, model: Any, action: Action, carry: Any) -> tuple[str | None, Any, Any]:
        """One call on one cache, checked (the model advances): (what differs or None, the cache, the carry)."""
        before = len(model.ended)
        method, args = concrete(action, model, self.g)
        want = self.model_call(model, method, args)
        key = state_key(model, self.canonical)
        if want[0] == "err":
            answers, obs = self.port.refused(cache, [(method, args)], live_of(model))
            answer = answers[0]
        else:
            ((answer, obs, cache),) = self.port.succeeded(cache, [], [(method, args, live_of(model), True)])
        if answer != want:
            return call_difference(action, answer, want), cache, carry
        problem, carry = self.verdict(model, key, obs, carry, before)
        return (problem and (f"after the refused call: {problem}" if want[0] == "err" else problem)), cache, carry


def live_of(model: Any) -> Sequence[int]:
    return CLOSED if model.closed else sorted(model.tables)


def check_path(port: ModulePort | DriverPort, g: Geometry, path: Sequence[Action], profile: Any = None,
               check_tables: TableCheck | None = None) -> tuple[int, str] | None:
    """Make the calls of `path` on one fresh cache, checking every step: (how many calls, what differs
    after the last of them) at the first difference, or None."""

    profile = parse_profile(profile) if profile is None or isinstance(profile, str) else profile
    canonical = not profile.exact_ids
    port = port.bound(g)
    checker = _Checker(port, g, canonical, check_tables or (functools.partial(renaming, num_blocks=g.num_blocks) if canonical else exact_tables))
    model = new_model(g, profile)
    cache = port.new(g)
    carry = None
    try:
        for n, action in enumerate(path, 1):
            problem, cache, carry = checker.step(cache, model, action, carry)
            if problem is not None:
                return n, problem
        return None
    finally:
        port.discard(cache)


def explore(
    port: ModulePort | DriverPort,
    g: Geometry,
    depth: int,
    *,
    profile: Any = None,
    check_tables: TableCheck | None = None,
    time_limit: float | None = None,
    progress: Callable[[Level], None] | None = None,
) -> Result:
    """Every call sequence of at most `depth` calls on geometry g, breadth first; stops at the first
    failure, once the same calls on one fresh cache fail too (else a Python module's deep copies are not
    faithful, and the walk starts again, replaying every path). `profile`: a Profile or its text."""
    profile = parse_profile(profile) if profile is None or isinstance(profile, str) else profile
    result = _drive(_explore(port, g, depth, profile, check_tables, time_limit, progress))
    if unfaithful(port, result, profile, check_tables):
        again = _drive(_explore(port, g, depth, profile, check_tables, time_limit, progress))
        again.note = UNFAITHFUL.format(port.name)
        return again
    return result


UNFAITHFUL = ("copy.deepcopy of {}'s cache is not faithful (a failure seen on a copy did not happen on a fresh cache): "
              "every path replayed instead")


def unfaithful(port: ModulePort | DriverPort, result: Result, profile: Any, check_tables: TableCheck | None) -> bool:
    """Whether a failure came from a deep copy that is not faithful (then copies are off from now on)."""
    if result.failure is None or not isinstance(port, ModulePort) or not port.can_copy:
        return False
    if check_path(port, result.geometry, result.failure.path, profile, check_tables) is not None:
        return False
    port.can_copy = False
    return True


def _drive(walk: Any) -> Result:
    """Run a walk (the generator `_explore`) to its end."""
    with few_collections():
        try:
            while True:
                next(walk)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """The garbage collector less often: a walk makes millions of objects that live until its depth is
    done, and scanning them again and again took 15 % of a walk's time."""
    import gc

    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _explore(
    port: ModulePort | DriverPort, g: Geometry, depth: int, profile: Any, check_tables: TableCheck | None,
    time_limit: float | None, progress: Callable[[Level], None] | None,
) -> Generator[Level, None, Result]:
    """The walk, one depth at a time: yields each depth's Level, returns the Result."""

    port = port.bound(g)

    canonical = not profile.exact_ids
    check = check_tables or (functools.partial(renaming, num_blocks=g.num_blocks) if canonical else exact_tables)
    checker = _Checker(port, g, canonical, check)
    start = time.monotonic()
    result = Result(g, depth)
    root = new_model(g, profile)
    seen: set[Any] = {state_key(root, canonical)}
    frontier = [_Node(root, port.new(g), [], [], None)]
    transitions = 0

    def finish(failure: Failure | None = None) -> Result:
        result.failure = failure
        result.states, result.transitions, result.seconds = len(seen), transitions, time.monotonic() - start
        for node in frontier:
            port.discard(node.cache)
        return result

    def fresh(node: _Node) -> Any:
        cache = port.new(g)
        for method, args in node.calls:
            port.call(cache, method, args)
        return cache

    def isolate(node: _Node, refused: list[tuple[Action, str, tuple[Any, ...], tuple[str, Any]]], before: int) -> Failure:
        """The refused calls went wrong together: the first that does alone, on a fresh cache, else the
        shortest run of them that does."""
        live, key = live_of(node.model), state_key(node.model, canonical)
        for upto in (False, True):
            for n, (action, method, args, want) in enumerate(refused):
                run = refused[: n + 1] if upto else [refused[n]]
                cache = fresh(node)
                answers, obs = port.refused(cache, [(m, a) for _, m, a, _ in run], live)
                port.discard(cache)
                problem = next((call_difference(r[0], got, r[3]) for r, got in zip(run, answers) if got != r[3]), None)
                if problem is None:
                    problem = checker.verdict(node.model, key, obs, node.carry, before)[0]
                    problem = problem and f"after the refused call{'s' if len(run) > 1 else ''}: {problem}"
                if problem:
                    return Failure(g, [*node.path, *(r[0] for r in run)], problem, profile)
        return Failure(g, [*node.path, refused[0][0]], "the refused calls differ together, but not on a fresh cache (not deterministic?)", profile)

    def settle(entry: tuple[Any, ...], nxt: list[_Node]) -> Failure | None:
        """Check one node's calls, once their answers are in: None, or the failure."""
        node, before, refused, made, got_refused, got_made = entry
        if got_refused is not None:  # on the node's own cache, one after another, then one observation
            answers, obs = got_refused()
            wrong = any(got != r[3] for r, got in zip(refused, answers))
            if wrong or checker.verdict(node.model, state_key(node.model, canonical), obs, node.carry, before)[0]:
                return isolate(node, refused, before)
        outcomes = got_made() if got_made is not None else []
        for (action, method, args, want, model, key), (answer, obs, cache) in zip(made, outcomes):
            problem = call_difference(action, answer, want) if answer != want else None
            carry = node.carry
            if problem is None:
                problem, carry = checker.verdict(model, key, obs, node.carry, before)
            if problem:
                return Failure(g, [*node.path, action], problem, profile)
            if cache is not None:
                nxt.append(_Node(model, cache, [*node.path, action], [*node.calls, (method, args)], carry))
        return None

    for d in range(depth):
        nxt: list[_Node] = []
        # A node's calls are sent, then the next nodes' prepared and sent (IN_FLIGHT in all), before the
        # first's answers are read: a driver answers while the explorer works out what the model says, and
        # its answers come back in batches (a module answers at once).
        pending: collections.deque[tuple[Any, ...]] = collections.deque()
        while frontier or pending:
            if pending and (len(pending) >= IN_FLIGHT or not frontier):
                failure = settle(pending.popleft(), nxt)
                if failure is not None:
                    return finish(failure)
                continue
            node = frontier[-1]
            if time_limit is not None and time.monotonic() - start > time_limit:
                while pending:
                    failure = settle(pending.popleft(), nxt)
                    if failure is not None:
                        return finish(failure)
                result.stopped = f"stopped at depth {d + 1} after {time_limit:g} s"
                frontier += nxt
                return finish()
            model0 = node.model
            before = len(model0.ended)
            refused: list[tuple[Action, str, tuple[Any, ...], tuple[str, Any]]] = []
            made: list[tuple[Action, str, tuple[Any, ...], tuple[str, Any], Any, Any]] = []
            spare = clone_model(model0)
            acts = actions(model0, g)
            transitions += len(acts)
            for action in acts:
                method, args = concrete(action, model0, g)
                want = checker.model_call(spare, method, args)
                if want[0] == "err":  # the model is unchanged, so is the spare
                    refused.append((action, method, args, want))
                else:
                    made.append((action, method, args, want, spare, state_key(spare, canonical)))
                    spare = clone_model(model0)
            got_refused = port.refused_async(node.cache, [(m, a) for _, m, a, _ in refused], live_of(model0)) if refused else None
            items: list[Item] = []
            for action, method, args, want, model, key in made:
                keep = key not in seen and d + 1 < depth
                seen.add(key)
                items.append((method, args, live_of(model), keep))
            got_made = port.succeeded_async(node.cache, node.calls, items) if items else None
            pending.append((node, before, refused, made, got_refused, got_made))
            frontier.pop()
            if not (items and items[-1][3]):  # the last call made was made on the node's cache, and kept it
                port.discard(node.cache)
        frontier = nxt[::-1]  # taken from the end: in the order they were found
        level = Level(d + 1, len(seen), transitions, time.monotonic() - start)
        result.levels.append(level)
        if progress:
            progress(level)
        yield level
    return finish()


def call_difference(action: Action, got: tuple[str, Any], want: tuple[str, Any]) -> str:
    def outcome(o: tuple[str, Any]) -> str:
        if o[0] == "err":
            return f"raised {o[1]}"
        return "returned" + (f" {o[1]}" if o[1] is not None else " normally")

    return f"{describe(action)} {outcome(got)}, but should have {outcome(want)}"


def first_difference(got: Any, want: Any, model: Any, live: Sequence[int]) -> str:
    """Which observable differs first, by name."""
    if live is CLOSED:
        names = ["stats() after close", "num_free_blocks() after close"]
    else:
        wire = isinstance(want[0], str)  # a driver's answers are text; a module's, values
        names = ["stats()", "num_free_blocks()"]
        for s in live:
            names.append(f"block_table({s})" if wire else f"block_table({s}) is int32")
            for layer in range(model.n_layers):
                names += [f"seq_len({s}, {layer})"] + ([f"gather({s}, {layer})"] if wire else [f"gather({s}, {layer}) k", f"gather({s}, {layer}) v"])
    if len(got) != len(want):
        return f"observing the state: {show(got[0])}"
    for name, g_, w in zip(names, got, want):
        if g_ != w:
            return f"{name}: {show(g_)}, but should be {show(w)}"
    return f"observations differ: {show(got)} vs {show(want)}"


def show(v: Any) -> str:
    if isinstance(v, tuple) and len(v) == 4 and isinstance(v[3], bytes):
        shape, char, contiguous, raw = v
        vals = np.frombuffer(raw, dtype=np.float16) if char == "e" else raw
        text = f"{np.dtype(char).name} {list(shape)} {np.asarray(vals).ravel().tolist()}" + ("" if contiguous else " (not C-contiguous)")
        return text[:200]
    return str(v)[:200]


def run(
    spec: str,
    depth: int,
    geometries: Iterable[Geometry] = GEOMETRIES,
    *,
    profile: str | None = None,
    check_tables: TableCheck | None = None,
    time_limit: float | None = None,
    progress: Callable[[Geometry, Level], None] | None = None,
) -> list[Result]:
    """Explore every geometry (those needing prefix caching only if the port has it), within time_limit
    seconds in all; stop at the first failure."""
    port = port_for(spec)
    chosen_profile = parse_profile(profile)
    try:
        caps = port.capabilities if isinstance(port, DriverPort) else _module_caps(port.module)
        chosen = [g for g in geometries if not g.prefix_caching or "prefix_caching" in caps]
        results = _interleaved(port, chosen, depth, chosen_profile, check_tables, time_limit, progress)
        if any(unfaithful(port, r, chosen_profile, check_tables) for r in results):
            results = _interleaved(port, chosen, depth, chosen_profile, check_tables, time_limit, progress)
            for r in results:
                r.note = UNFAITHFUL.format(port.name)
    finally:
        port.stop()
    return results


def _interleaved(
    port: ModulePort | DriverPort, geometries: Sequence[Geometry], depth: int, profile: Any, check_tables: TableCheck | None,
    time_limit: float | None, progress: Callable[[Geometry, Level], None] | None,
) -> list[Result]:
    """Every geometry's walk, one depth at a time in turn (depth 1 of each, then depth 2, ...), so that the
    first failure is a shortest one across them all; the walks still going then stop."""
    def reporter(g: Geometry) -> Callable[[Level], None] | None:
        if progress is None:
            return None
        report = progress
        return lambda level: report(g, level)

    with few_collections():
        return _interleave(port, geometries, depth, profile, check_tables, time_limit, reporter)


def _interleave(
    port: ModulePort | DriverPort, geometries: Sequence[Geometry], depth: int, profile: Any, check_tables: TableCheck | None,
    time_limit: float | None, reporter: Callable[[Geometry], Callable[[Level], None] | None],
) -> list[Result]:
    walks = {g: _explore(port, g, g.depth(depth), profile, check_tables, time_limit, reporter(g)) for g in geometries}
    results: dict[Geometry, Result] = {}
    levels: dict[Geometry, int] = {g: 0 for g in geometries}
    own: dict[Geometry, float] = {g: 0.0 for g in geometries}  # the seconds each walk took, apart from the others
    while len(results) < len(walks):
        for g, walk in walks.items():
            if g in results:
                continue
            began = time.monotonic()
            try:
                levels[g] = next(walk).depth
                own[g] += time.monotonic() - began
            except StopIteration as stop:
                results[g] = stop.value
                results[g].seconds = own[g] + time.monotonic() - began
                if results[g].failure is not None:
                    for other, rest in walks.items():
                        if other not in results:
                            rest.close()
                            results[other] = Result(other, other.depth(depth), stopped=f"walked to depth {levels[other]}, then stopped: another geometry failed")
                    return [results[x] for x in geometries]
    return [results[x] for x in geometries]


def _module_caps(module: Any) -> frozenset[str]:
    from .server import capabilities

    return frozenset(capabilities(module))


def summary(results: Sequence[Result]) -> str:
    """The bounded guarantee, in one line per geometry."""
    lines = []
    for r in results:
        if r.failure:
            lines.append(f"{r.geometry}: FAILS after {r.failure.calls} calls ({r.states:,} states, {r.transitions:,} calls checked, {r.seconds:.1f} s)")
        elif r.stopped and not r.states:
            lines.append(f"{r.geometry}: {r.stopped}")
        elif r.stopped:
            lines.append(f"{r.geometry}: {r.stopped}: {r.states:,} states, {r.transitions:,} calls checked")
        else:
            lines.append(
                f"{r.geometry}: every sequence of <= {r.depth} calls agrees with the model: {r.states:,} states, "
                f"{r.transitions:,} calls checked, {r.seconds:.1f} s"
            )
    return "\n".join(lines)


def replay_text(transcript: Any, impl: str) -> str:
    """Replay a transcript against impl: the requests up to the first answer that differs, and how it
    differs; or that none does."""
    from .client import DriverError, Session
    from .transcript import replay

    try:
        session = Session(impl)
    except (DriverError, ImportError) as exc:
        return f"(could not replay: {exc})"
    try:
        mismatch = replay(transcript, session.send)
    except DriverError as exc:
        return f"replaying it: {exc}"
    finally:
        session.close()
    if mismatch is None:
        return "replayed, every answer matches the oracle's (the difference is in what the wire cannot show)"
    from .diff import shorten

    shown = [f"    > {shorten(request, 100)}\n    < {shorten(want, 100)}" for request, want in transcript.steps[: mismatch.step - 1]]
    shown.append(f"    > {shorten(mismatch.request, 100)}\n    < {shorten(mismatch.got, 100)}   <- the port's answer; the oracle's: {shorten(mismatch.want, 100)}")
    return "replaying it, the requests up to the first answer that differs:\n" + "\n".join(shown) + f"\n  {mismatch}"


def report(results: Sequence[Result], impl: str, transcript_out: str | None) -> tuple[bool, list[str]]:
    """The verdict's lines: the bounded guarantee on a pass; the shortest failing trace, its transcript and
    its replay on a failure."""
    lines = summary(results).splitlines()
    lines += [f"  note: {r.note}" for r in results if r.note]
    failed = next((r for r in results if r.failure is not None), None)
    if failed is None or failed.failure is None:
        return True, lines
    f = failed.failure
    lines.append(f"  shortest failing sequence ({f.calls} calls on {f.geometry}): {'; '.join(map(describe, f.path))}")
    lines.append(f"  what differs after the last call: {f.what}")
    transcript = f.transcript(impl)
    if transcript_out:
        from pathlib import Path

        Path(transcript_out).write_text(transcript.text(), encoding="ascii", errors="replace")
        lines.append(f"  as a transcript: {transcript_out} ({len(transcript.steps)} requests); replay it: ci/gate --replay {transcript_out} --impl '{impl}'")
    lines.append("  " + replay_text(transcript, impl))
    return False, lines


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m wire.explore [--impl SPEC] [--depth K] ...`: exit 0 when every sequence agrees, 1 on a failure."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m wire.explore", description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", default="paged", help="a Python module, or exec:CMD for a driver (default paged)")
    parser.add_argument("--depth", type=int, default=6, help="every sequence of at most K calls (default 6)")
    parser.add_argument("--profile", default=None, help="OPTION=VALUE,... (docs/CONTRACT.md, Profiles); allocation=any compares tables up to renaming")
    parser.add_argument("--geometry", type=int, action="append", help="walk only geometry I of GEOMETRIES (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per geometry before the walk stops (no guarantee then)")
    parser.add_argument("--transcript-out", default=None, help="where a failure's transcript is written")
    parser.add_argument("--json", default=None, help="write the results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no line per depth")
    args = parser.parse_args(argv)
    geometries = [GEOMETRIES[i] for i in args.geometry] if args.geometry else list(GEOMETRIES)

    def progress(g: Geometry, level: Level) -> None:
        if not args.quiet:
            print(f"  {g}: depth {level.depth}: {level.states:,} states, {level.transitions:,} calls, {level.seconds:.1f} s", flush=True)

    results = run(args.impl, args.depth, geometries, profile=args.profile, time_limit=args.time_limit, progress=progress)
    ok, lines = report(results, args.impl, args.transcript_out)
    print("\n".join(lines))
    if args.json:
        module_file = ""
        if not args.impl.startswith("exec:"):
            import importlib

            module_file = str(getattr(importlib.import_module(args.impl), "__file__", ""))
        payload = {
            "impl": args.impl, "module_file": module_file, "depth": args.depth, "passed": ok,
            "results": [
                {"geometry": str(r.geometry), "depth": r.depth, "states": r.states, "transitions": r.transitions,
                 "seconds": round(r.seconds, 2), "stopped": r.stopped, "note": r.note,
                 "levels": [vars(level) for level in r.levels],
                 "failure": None if r.failure is None else {"calls": r.failure.calls, "geometry": str(r.failure.geometry), "path": [describe(a) for a in r.failure.path], "what": r.failure.what}}
                for r in results
            ],
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=1)
    sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
