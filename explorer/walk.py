"""The walk: breadth first, a depth at a time, every call from every state it keeps, each checked.

Up to a geometry's tree depth k the walk keeps every node: every sequence of at most k calls the model
accepts is made and checked, whatever state it reaches (a port's hidden state may differ between two
paths into one model state: a cache that keeps stale state for a freed id fails on `add_seq(0);
free(0); add_seq(0); append(...)`, whose first three calls lead back to a state seen before). Beyond
k, a node is kept only when its model state (`oracle.state.key`) is new: every model state reachable
within the depth K is reached, through one path each, and every call from it is checked, but at the
last depth, where no node is kept, only the calls that reach a new state are (a call into a state
seen before adds nothing to either claim, and they were half the cost of a walk).

At each node kept, every call the model accepts is made on a copy of the node's cache (the port's
copy: a replay of the node's calls on a fresh cache, or an opt-in faithful copy), answer and observation checked; then every call the model refuses
is made on the node's own cache, one after another, each answer checked, then the state observed once.
If that goes wrong, each refused call is made alone on a fresh cache to name the one.

A failure at depth d <= k + 1 in every geometry walked (and not of refused calls that fail only
together) is a shortest one: every sequence of fewer accepted calls agrees. Beyond, it is not known to
be: a shorter one may go through a path that was merged away. A failure is confirmed on a fresh cache;
a module's copies that turn out unfaithful (the sampled check, or a failure the fresh cache does not
show) are given up and the walk starts again, replaying every state.
"""

from __future__ import annotations

import collections
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Sequence

from .alphabet import Action, Geometry, actions, concrete, describe
from .messages import call_difference, first_difference
from oracle import state
from oracle.as_impl import under
from oracle.model import ModelKVCache, OutOfBlocks
from oracle.profile import Profile
from wire.record import Recorder

from .observation import Answer, Item, Observation, Port, group_reads, reads
from .oracle_side import error_kind, live_of, model_tables, new_model, profile_or_default, table_checks
from .ports import ModulePort, UnfaithfulCopy

IN_FLIGHT = 8  # nodes whose requests are sent before the oldest one's answers are read
Refused = tuple[Action, str, tuple[Any, ...], Answer]  # action, method, args, the model's answer


@dataclass
class Failure:
    geometry: Geometry
    path: list[Action]  # the calls, the last one the call after which something differs
    what: str
    profile: Profile | None = None  # the profile it was found under
    single: bool = True  # False: refused calls that fail only one after another, not alone
    shortest: bool = False  # every sequence of fewer accepted calls agrees, on every geometry walked
    note: str = ""

    @property
    def calls(self) -> int:
        return len(self.path)

    def __str__(self) -> str:
        return f"{self.calls} calls on {self.geometry}: {'; '.join(map(describe, self.path))}\n  {self.what}"

    def transcript(self, impl: str = "") -> Any:
        """The calls as wire requests, then every observation after the last one, with the oracle's answers."""
        g = self.geometry
        recorder = Recorder()
        profile = self.profile if self.profile is not None else Profile()
        reference = under(profile)
        wrapped = recorder.wrap(reference)
        cache = wrapped.PagedKVCache(*g.sizes, **g.options)
        model = new_model(g, profile)
        for action in self.path:
            method, args = concrete(action, model, g)
            for target in (model, cache):
                try:
                    getattr(target, method)(*args)
                except Exception:  # noqa: BLE001 - refused calls are part of the trace
                    pass
        live = live_of(model)
        for r in reads(live, g.n_layers) + group_reads(live, g.group_layers):
            try:
                getattr(cache, r.method)(*r.args)
            except Exception:  # noqa: BLE001
                pass
        kind = "a shortest failing call sequence" if self.shortest else "a failing call sequence"
        meta = {"id": "exhaustive-failure", "comment": f"{kind} ({self.calls} calls on {g}): {self.what}"[:300], "flags": "exhaustive"}
        if impl:
            meta["impl"] = impl
        if g.needs:
            meta["requires"] = " ".join(sorted(g.needs))
        if str(profile):
            meta["profile"] = str(profile)
        return recorder.transcript(meta, reference)


@dataclass
class Level:
    depth: int
    states: int  # distinct model states reached with at most `depth` calls
    sequences: int  # sequences of accepted calls checked, of at most min(depth, tree depth) calls
    transitions: int  # calls checked with at most `depth` calls
    seconds: float


@dataclass
class Result:
    geometry: Geometry
    depth: int  # every model state within this many calls (through one path each)
    tree_depth: int = 0  # every sequence of at most this many accepted calls
    canonical: bool = False  # states are up to a renaming of block ids (allocation=any)
    also_renamed: bool = False  # every table also checked up to a renaming of block ids (`oracle_side.table_checks`)
    states: int = 0
    sequences: int = 0
    transitions: int = 0
    seconds: float = 0.0
    levels: list[Level] = field(default_factory=list)
    failure: Failure | None = None
    stopped: str = ""  # why the walk ended before its depth (a time limit, another geometry's failure), else ""
    note: str = ""


@dataclass
class _Node:
    model: ModelKVCache
    cache: Any
    path: list[Action]
    calls: list[tuple[str, tuple[Any, ...]]]
    carry: Any  # each table check's carry along this path (None at the root)


class _Checker:
    """What the model says of one call, and whether a port's answer and observation agree with it; the
    expected observations are kept by state key."""

    def __init__(self, port: Port, g: Geometry, profile: Profile, also_renamed: bool = False) -> None:
        self.port, self.g, self.profile = port, g, profile
        self.canonical = not profile.exact_ids
        self.checks = table_checks(profile, g.num_blocks, also_renamed)
        self.model_oob = OutOfBlocks
        self.expected: dict[Any, Any] = {}

    def model_call(self, model: ModelKVCache, method: str, args: tuple[Any, ...]) -> Answer:
        try:
            result = getattr(model, method)(*args)
        except Exception as exc:  # noqa: BLE001 - the model's refusal, compared by kind
            return "err", error_kind(exc, self.model_oob)
        return "ok", int(result) if method == "add_seq" else None

    def verdict(self, model: ModelKVCache, key: Any, obs: Observation, carry: Any, before: int, after: str) -> tuple[str | None, Any]:
        """What differs between the port's observation and the model's state, or None; and the carry.
        `after`: the call (or calls) that made the state, for the message."""
        live = live_of(model)
        want = self.expected.get(key)
        if want is None:
            want = self.expected[key] = self.port.expect(model, live)
        if obs.values != want:
            return first_difference(obs, want, model, live, after), carry
        if model.is_closed():
            return None, carry
        released = model.released(since=before)  # the oracle's blocks whose lifetime ended in this call
        tables = model_tables(model, live, self.g.group_layers)
        carries = []
        for (check, hint), mine in zip(self.checks, carry or [None] * len(self.checks)):
            problem, mine = check(tables, obs.tables, mine, released)
            if problem is not None:
                read = re.match(r"block_table\(\d+(, \d+)?\)", problem)
                return f"{problem} [{read.group(0) if read else 'block_table'}, after {after}] ({hint})", carry
            carries.append(mine)
        return None, tuple(carries)

    def step(self, cache: Any, model: ModelKVCache, action: Action, carry: Any) -> tuple[str | None, Any, Any]:
        """One call on one cache, checked (the model advances): (what differs or None, the cache, the carry)."""
        before = model.released_count()
        method, args = concrete(action, model, self.g)
        want = self.model_call(model, method, args)
        key = state.key(model, self.canonical)
        if want[0] == "err":
            answers, obs = self.port.refused(cache, [(method, args)], live_of(model))
            answer = answers[0]
        else:
            (outcome,) = self.port.succeeded(cache, [], [Item(method, args, live_of(model), True)])
            answer, obs, cache = outcome.answer, outcome.observation, outcome.cache
        if answer != want:
            return call_difference(action, answer, want), cache, carry
        after = f"the refused {describe(action)}" if want[0] == "err" else describe(action)
        problem, carry = self.verdict(model, key, obs, carry, before, after)
        return problem, cache, carry


def check_path(
    port: Port, g: Geometry, path: Sequence[Action], profile: Profile | str | None = None, also_renamed: bool = False,
) -> tuple[int, str] | None:
    """Make the calls of `path` on one fresh cache, checking every step: (how many calls, what differs
    after the last of them) at the first difference, or None."""
    profile = profile_or_default(profile)
    port = port.bound(g)
    checker = _Checker(port, g, profile, also_renamed)
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


def walk(
    port: Port, g: Geometry, depth: int, tree: int, profile: Profile,
    time_limit: float | None, progress: Callable[[Level], None] | None, also_renamed: bool = False,
) -> Generator[Level, None, Result]:
    """One geometry's walk, one depth at a time: yields each depth's Level, returns the Result."""
    port = port.bound(g)
    checker = _Checker(port, g, profile, also_renamed)
    canonical = checker.canonical
    start = time.monotonic()
    result = Result(g, depth, tree, canonical, also_renamed)
    root = new_model(g, profile)
    seen: set[Any] = {state.key(root, canonical)}
    frontier = [_Node(root, port.new(g), [], [], None)]
    transitions = sequences = 0

    def finish(failure: Failure | None = None) -> Result:
        result.failure = failure
        result.states, result.sequences, result.transitions = len(seen), sequences, transitions
        result.seconds = time.monotonic() - start
        for node in frontier:
            port.discard(node.cache)
        return result

    def isolate(node: _Node, refused: list[Refused], before: int) -> Failure:
        """The refused calls went wrong together: the first that does alone, on a fresh cache, else the
        shortest run of them that does."""
        live, key = live_of(node.model), state.key(node.model, canonical)
        for upto in (False, True):
            for n, (action, method, args, want) in enumerate(refused):
                run = refused[: n + 1] if upto else [refused[n]]
                cache = port.replay(node.calls)
                answers, obs = port.refused(cache, [(m, a) for _, m, a, _ in run], live)
                port.discard(cache)
                problem = next((call_difference(r[0], got, r[3]) for r, got in zip(run, answers) if got != r[3]), None)
                if problem is None:
                    after = "the refused " + "; ".join(describe(r[0]) for r in run)
                    problem = checker.verdict(node.model, key, obs, node.carry, before, after)[0]
                if problem:
                    return Failure(g, [*node.path, *(r[0] for r in run)], problem, profile, single=not upto)
        what = "the refused calls differ one after another, but not on a fresh cache (not deterministic?)"
        return Failure(g, [*node.path, *(r[0] for r in refused)], what, profile, single=False)

    def settle(entry: tuple[Any, ...], nxt: list[_Node]) -> Failure | None:
        """Check one node's calls, once their answers are in: None, or the failure."""
        node, before, refused, made, got_made, got_refused = entry
        if got_refused is not None:  # on the node's own cache, one after another, then one observation
            answers, obs = got_refused()
            wrong = any(got != r[3] for r, got in zip(refused, answers))
            after = "the refused calls from " + ("; ".join(map(describe, node.path)) or "the start")
            if wrong or checker.verdict(node.model, state.key(node.model, canonical), obs, node.carry, before, after)[0]:
                return isolate(node, refused, before)
        outcomes = got_made() if got_made is not None else []
        for (action, method, args, want, model, key), outcome in zip(made, outcomes):
            problem = call_difference(action, outcome.answer, want) if outcome.answer != want else None
            carry = node.carry
            if problem is None:
                problem, carry = checker.verdict(model, key, outcome.observation, node.carry, before, describe(action))
            if problem:
                return Failure(g, [*node.path, action], problem, profile)
            if outcome.cache is not None:
                nxt.append(_Node(model, outcome.cache, [*node.path, action], [*node.calls, (method, args)], carry))
        return None

    for d in range(depth):
        nxt: list[_Node] = []
        every = d + 1 < tree  # the children are kept whatever their state (the tree), else only a new state's
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
            if time_limit is not None and time.monotonic() - start > time_limit:
                while pending:
                    failure = settle(pending.popleft(), nxt)
                    if failure is not None:
                        return finish(failure)
                result.stopped = f"stopped at depth {d + 1} after {time_limit:g} s"
                frontier += nxt
                return finish()
            node = frontier.pop()
            model0 = node.model
            before = model0.released_count()
            refused: list[Refused] = []
            made: list[tuple[Action, str, tuple[Any, ...], Answer, Any, Any]] = []
            spare = state.copy(model0)
            acts = actions(model0, g)
            transitions += len(acts)
            for action in acts:
                method, args = concrete(action, model0, g)
                want = checker.model_call(spare, method, args)
                if want[0] == "err":  # the model is unchanged, so is the spare
                    refused.append((action, method, args, want))
                else:
                    made.append((action, method, args, want, spare, state.key(spare, canonical)))
                    spare = state.copy(model0)
            if d + 1 <= tree:
                sequences += len(made)
            elif d + 1 == depth:  # the last depth, past the tree: only the calls that reach a new state
                kept = [m for m in made if m[5] not in seen]
                transitions -= len(made) - len(kept)
                made = kept
            items: list[Item] = []
            for action, method, args, want, model, key in made:
                items.append(Item(method, args, live_of(model), d + 1 < depth and (every or key not in seen)))
                seen.add(key)
            # The copies first, of the state as its path left it; then the refused calls on the node's own cache.
            own = not refused
            got_made = port.succeeded_async(node.cache, node.calls, items, own) if items else None
            got_refused = port.refused_async(node.cache, [(m, a) for _, m, a, _ in refused], live_of(model0)) if refused else None
            if not (own and items and items[-1].keep):  # else the node's cache is its last child's
                port.discard(node.cache)
            pending.append((node, before, refused, made, got_made, got_refused))
        frontier = nxt[::-1]  # taken from the end: in the order they were found
        level = Level(d + 1, len(seen), sequences, transitions, time.monotonic() - start)
        result.levels.append(level)
        if progress:
            progress(level)
        yield level
    return finish()


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


def interleave(
    port: Port, geometries: Sequence[Geometry], depth: int, tree_depth: int | None, profile: Profile,
    time_limit: float | None, progress: Callable[[Geometry, Level], None] | None, also_renamed: bool = False,
) -> list[Result]:
    """Every geometry's walk, one depth at a time in turn (depth 1 of each, then depth 2, ...), so that the
    first failure is a shortest one across them all when it is within every tree depth; the walks still
    going then stop. A module's copies found unfaithful are given up, and every walk starts again.
    `also_renamed`: every table also checked up to a renaming of block ids (`oracle_side.table_checks`)."""
    while True:
        try:
            with few_collections():
                results = _interleave(port, geometries, depth, tree_depth, profile, time_limit, progress, also_renamed)
        except UnfaithfulCopy as exc:
            if not isinstance(port, ModulePort):  # only a module's copies are made by a copier
                raise
            port.stop_copying(f"{exc}; every state was replayed from the root instead")
            continue
        failed = next((r.failure for r in results if r.failure is not None), None)
        if failed is None or confirmed(port, failed, profile, also_renamed):
            break
    for r in results:
        r.note = port.note
    if failed is not None:
        trees = [g.tree(depth, tree_depth) for g in geometries]
        failed.shortest = failed.single and failed.calls - 1 <= min(trees)
    return results


def confirmed(port: Port, failure: Failure, profile: Profile, also_renamed: bool) -> bool:
    """Whether the failure happens on a fresh cache too. When it does not and it was found on a module's
    copies, they were not faithful (one the sampled check missed): copying stops, and the walk starts again."""
    if check_path(port, failure.geometry, failure.path, profile, also_renamed) is not None:
        return True
    if isinstance(port, ModulePort) and port.can_copy:
        port.stop_copying(f"a failure seen on copies of {port.name}'s cache did not happen on a fresh cache: "
                          "the copies were not faithful, and every state was replayed from the root instead")
        return False
    failure.note = "the same calls on a fresh cache do not fail: is the implementation deterministic?"
    return True


def _interleave(
    port: Port, geometries: Sequence[Geometry], depth: int, tree_depth: int | None, profile: Profile,
    time_limit: float | None, progress: Callable[[Geometry, Level], None] | None, also_renamed: bool,
) -> list[Result]:
    def reporter(g: Geometry) -> Callable[[Level], None] | None:
        if progress is None:
            return None
        report = progress
        return lambda level: report(g, level)

    walks = {g: walk(port, g, g.depth(depth), g.tree(depth, tree_depth), profile, time_limit, reporter(g), also_renamed) for g in geometries}
    results: dict[Geometry, Result] = {}
    levels: dict[Geometry, list[Level]] = {g: [] for g in geometries}  # the depths each walk has done
    own: dict[Geometry, float] = {g: 0.0 for g in geometries}  # the seconds each walk took, apart from the others
    while len(results) < len(walks):
        for g, each in walks.items():
            if g in results:
                continue
            began = time.monotonic()
            try:
                levels[g].append(next(each))
                own[g] += time.monotonic() - began
            except StopIteration as stop:
                results[g] = stop.value
                results[g].seconds = own[g] + time.monotonic() - began
                if results[g].failure is not None:
                    for other, rest in walks.items():
                        if other not in results:
                            rest.close()
                            done = levels[other]
                            results[other] = Result(
                                other, other.depth(depth), other.tree(depth, tree_depth), not profile.exact_ids, also_renamed, levels=done,
                                states=done[-1].states if done else 0, stopped=f"walked to depth {len(done)}, then stopped: another geometry failed",
                            )
                    return [results[x] for x in geometries]
    return [results[x] for x in geometries]
