"""Bounded exhaustive checking (issue 21, issue 26): every short call sequence on tiny pools.

`run(spec, depth)` walks each geometry of `GEOMETRIES` (and of `WINDOW_GEOMETRIES` for a port that
announces `sliding_window`, of `HYBRID_GEOMETRIES` for one that announces `hybrid`) breadth first (`walk.py`), making each call
on the oracle (`oracle.ModelKVCache`) and on the implementation under test, and after each call
compares the answer (result or error kind) and every observable: stats, the free count, every live
table, every layer's length and gather (bit exact). What it walks, each claim for what it is:

- every sequence of at most k calls the model accepts (k: the geometry's tree depth, 3 or 4), with
  no merging, whatever state each reaches: a port's hidden state may differ between two paths into
  one model state;
- beyond k, every model state reachable within the depth K (default 6), through one path each: a
  node is continued only when its model state (`oracle.state.key`) is new;
- from each node continued, every call the model refuses, made one after another, each checked.

With `also_renamed` (`--also-renamed`, an allocation=lowest-free profile) every table is also checked up to a
renaming of block ids, allocation=any's check (`oracle_side.table_checks`): the oracle is the same under both,
and the states kept exactly include the first path into each state up to a renaming, so one walk checks
all a walk under allocation=any would, and more.

Geometries are walked a depth at a time in turn, so a failure within every tree depth is a shortest
one across them all. The parts: `alphabet.py` (geometries, the calls tried, the values sent),
`observation.py` (the seam: calls, answers, the one layout of what is observed, the `Port` protocol),
`oracle_side.py` (the oracle's side: making it, error kinds, table checkers; its copy and state key are
`oracle.state`'s), `ports.py` and `driver_port.py` (a Python module, each state's cache made by
replaying its calls on a fresh cache, so state kept outside the cache object is made too (opt-in:
copies pickled by `faithful.py` and checked against replays); a driver, a cache per state by handle,
its calls replayed likewise, its requests sent ahead by `wire.process`), `walk.py`, `messages.py` (what differs,
in the one format) and `report.py` (the verdict). docs/EXHAUSTIVE.md has the cost and the limits.
It is no part of the protocol: it drives one (`wire`), and the oracle.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable, Iterable, Sequence

from oracle.profile import Profile
from wire.target import Impl, module_parts, parse

from .alphabet import BAD_CHUNKS, EVERY_GEOMETRY, GEOMETRIES, HYBRID_GEOMETRIES, WINDOW_GEOMETRIES, Action, Geometry, actions, bad_chunk, chunk, concrete, describe, value
from .faithful import difference, faithful_copy
from .oracle_side import TableCheck, exact_tables, new_model, profile_or_default, table_checks, tables_up_to_renaming
from .driver_port import DriverPort
from .observation import Observation, Port
from .ports import ModulePort, UnfaithfulCopy, each_copy, snapshots
from .report import guarantee, replay_text, report, summary, walked
from .walk import Failure, Level, Result, check_path, interleave

__all__ = [
    "BAD_CHUNKS", "EVERY_GEOMETRY", "GEOMETRIES", "HYBRID_GEOMETRIES", "WINDOW_GEOMETRIES", "Action", "Failure", "Geometry", "Level", "ModulePort", "Observation", "Port", "Result", "TableCheck",
    "UnfaithfulCopy", "actions", "bad_chunk", "check_path", "chunk", "concrete", "describe",
    "difference", "each_copy", "exact_tables", "explore", "faithful_copy", "guarantee", "main", "new_model", "profile_or_default",
    "port_for", "table_checks", "tables_up_to_renaming", "replay_text", "report", "run", "snapshots", "summary", "value", "walked", "windowed",
]


def port_for(spec: str | Impl) -> ModulePort | DriverPort:
    """A driver's port (a DriverPort), or a Python module's (a ModulePort), for `spec` (`wire.target.parse`).
    It lives here so that ports.py and driver_port.py need not import each other."""
    impl = parse(spec)
    if impl.driver:
        return DriverPort(impl)
    return ModulePort(importlib.import_module(impl.text))


def explore(
    port: Port,
    g: Geometry,
    depth: int,
    *,
    profile: Profile | None = None,
    time_limit: float | None = None,
    progress: Callable[[Level], None] | None = None,
    tree_depth: int | None = None,
    also_renamed: bool = False,
) -> Result:
    """Walk one geometry to `depth` (every sequence of accepted calls to its tree depth, or `tree_depth`);
    stop at the first failure, once the same calls fail on a fresh cache too. `profile`: None for the default.
    `also_renamed` (an exact-ids profile): every table also checked up to a renaming (`table_checks`)."""
    report_level = None if progress is None else (lambda _g, level: progress(level))
    (result,) = interleave(port, [g], depth, tree_depth, profile_or_default(profile), time_limit, report_level, also_renamed)
    return result


def run(
    spec: str | Impl,
    depth: int,
    geometries: Iterable[Geometry] = EVERY_GEOMETRY,
    *,
    profile: Profile | None = None,
    time_limit: float | None = None,
    progress: Callable[[Geometry, Level], None] | None = None,
    tree_depth: int | None = None,
    also_renamed: bool = False,
) -> list[Result]:
    """Explore every geometry (those needing prefix caching or a window only if the port announces it),
    within time_limit seconds per geometry; stop at the first failure. `also_renamed`: as `explore`'s."""
    port = port_for(spec)
    try:
        caps = port.capabilities if not isinstance(port, ModulePort) else module_parts(port.module)
        chosen = [g for g in geometries if g.needs <= caps]
        return interleave(port, chosen, depth, tree_depth, profile_or_default(profile), time_limit, progress, also_renamed)
    finally:
        port.stop()


def windowed(geometries: Iterable[Geometry], window: int) -> list[Geometry]:
    """The geometries with a sliding window of `window` positions (CONTRACT.md "Sliding window (opt-in)"):
    the same pools and calls, made on caches that release what no layer's window reaches."""
    return [dataclasses.replace(g, sliding_window=window) for g in geometries]


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m explorer [--impl SPEC] [--depth K] ...`: exit 0 when the walk agrees, 1 on a failure, 2 when
    no geometry could be walked (each needs a capability the port does not announce)."""
    import argparse
    import json
    import sys

    from oracle.profile import ProfileError
    from oracle.profile import parse as parse_text

    parser = argparse.ArgumentParser(prog="python -m explorer", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--impl", default="paged", help="a Python module, or exec:CMD for a driver (default paged)")
    parser.add_argument("--depth", type=int, default=6, help="every model state within K calls (default 6)")
    parser.add_argument("--tree-depth", type=int, default=None, help="every sequence of at most T accepted calls (default: each geometry's, 3 or 4)")
    parser.add_argument("--profile", default=None, help="OPTION=VALUE,... (docs/CONTRACT.md, Profiles); allocation=any compares tables up to renaming")
    parser.add_argument("--also-renamed", action="store_true",
                        help="also check every table up to a renaming of block ids (allocation=any's check): one walk for both profiles")
    parser.add_argument("--geometry", type=int, action="append", help="walk only geometry I of EVERY_GEOMETRY, the window's from 6 on, hybrid models' from 15 on (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per geometry before the walk stops (it then claims only the depths done)")
    parser.add_argument("--transcript-out", default=None, help="where a failure's transcript is written")
    parser.add_argument("--json", default=None, help="write the results as JSON here")
    parser.add_argument("--quiet", action="store_true", help="no line per depth")
    parser.add_argument("--quick", action="store_true", help="only the geometries the whole gate's depth-3 step walks (Geometry.quick)")
    parser.add_argument("--sliding-window", type=int, default=None, metavar="W",
                        help="make the oracle and the implementation with sliding_window=W on every base geometry, instead of the window's own")
    args = parser.parse_args(argv)
    try:
        profile = parse_text(args.profile or "")  # the edge: --profile's text
    except ProfileError as exc:
        parser.error(f"--profile: {exc}")
    if args.also_renamed and not profile.exact_ids:
        parser.error(f"--also-renamed: the profile {profile} already compares tables up to a renaming; it adds a check to allocation=lowest-free's")
    geometries = [EVERY_GEOMETRY[i] for i in args.geometry] if args.geometry else [g for g in EVERY_GEOMETRY if g.quick or not args.quick]
    if args.sliding_window is not None:
        geometries = windowed([g for g in geometries if g.sliding_window is None], args.sliding_window)

    def progress(g: Geometry, level: Level) -> None:
        if not args.quiet:
            print(f"  {g}: depth {level.depth}: {level.states:,} states, {level.sequences:,} sequences, {level.transitions:,} calls, {level.seconds:.1f} s", flush=True)

    impl = parse(args.impl)  # the edge: --impl's text
    results = run(impl, args.depth, geometries, profile=profile, time_limit=args.time_limit, progress=progress, tree_depth=args.tree_depth,
                  also_renamed=args.also_renamed)
    if not results:
        needs = sorted(set().union(*(g.needs for g in geometries)))
        print(f"nothing walked: each geometry chosen needs a capability {args.impl} does not announce (they need {', '.join(needs)})")
        return 2
    ok, lines = report(results, impl, args.transcript_out)
    print(f"walked: {walked(results)}")
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(as_json(results, impl, args.depth, ok), out, indent=1)
    sys.stdout.flush()
    return 0 if ok else 1


def as_json(results: Sequence[Result], impl: Impl, depth: int, ok: bool) -> dict[str, Any]:
    """The results as `--json` writes them (mutants/runner.py reads them)."""
    module_file = "" if impl.driver else str(getattr(importlib.import_module(impl.text), "__file__", ""))
    return {
        "impl": impl.text, "module_file": module_file, "depth": depth, "passed": ok,
        "results": [
            {"geometry": str(r.geometry), "name": r.geometry.name, "depth": r.depth, "tree_depth": r.tree_depth, "states": r.states,
             "sequences": r.sequences, "transitions": r.transitions, "seconds": round(r.seconds, 2), "stopped": r.stopped, "note": r.note,
             "guarantee": guarantee(r), "levels": [vars(level) for level in r.levels],
             "failure": None if r.failure is None else {
                 "calls": r.failure.calls, "geometry": str(r.failure.geometry), "path": [describe(a) for a in r.failure.path],
                 "what": r.failure.what, "shortest": r.failure.shortest}}
            for r in results
        ],
    }
