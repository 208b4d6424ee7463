"""`python -m mutants --engine NAME[,NAME...]` (vllm_v1, vllm_window, vllm_window_served, vllm_hybrid_served, nano_vllm;
vllm_hybrid is a gate alone): the engines' field bugs, planted back in a copy of the installed engine, each gated through its
adapter, the module engines.NAME (an engine's name is its adapter's file stem).

The way --rust works for the Rust port, with the engine's installed source in place of ours:

1. Find the installed engine (the `vllm` or `nanovllm` folder on sys.path) and mirror it into a
   temporary folder (mutants/mirror.py): symlinks to the installed files and folders (the vLLM
   wheel is 321 MB; nothing is copied but the files a mutant edits).
2. Gate the unmutated, installed engine (`python -m paged_gate --impl engines.NAME`, under its PROFILE, with
   engines/NAME.xfails): it must PASS (exit 2 otherwise). With tests given after `--`, run those on the
   unmutated mirror instead.
3. For each mutant (mutants/engines/vNN_*.py for vLLM, wNN_*.py for its sliding window, nNN_*.py for nano-vllm; each an exact
   edit of one engine file, relative to site-packages, whose old text must occur exactly once),
   edit the copies of its files in a fresh mirror, and run pytest with the
   mirror first on PYTHONPATH, so the adapter loads the mutated engine. The guard plugin
   (mutants/guard.py) checks, inside that pytest process, that every edited module was imported
   from the mirror; else `error`.
4. Verdicts as the planted mutants' (mutants/pytest_run.py, the same code): a failed test is
   `killed` (by the first one), exit 0 `survived`, anything else `error`.

An adapter that adds a capability to another's (vllm_window and vllm_window_served add sliding_window to
vllm_v1) is gated, clean and with its mutants, on the tests that need it alone when that other is gated in
full earlier in the same run (`narrowing`: the rest would run the same code twice), once built without it
it is shown to answer a script of calls as that other does (`same_as_base`); its gate says PARTIAL.

With several engines, their clean runs go one after the other and every engine's mutants share one pool of
-j runs, each engine's queued as soon as its clean run passes, the expected survivors (whole-suite runs) first.

Tests (arguments after `--` replace them): the whole suite (`tests`), under the profile the adapter
declares (its PROFILE: block ids compared up to a renaming, the oracle taking the engine's choices),
with engines/NAME.xfails (the clean engine's real differences) listed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mutants import Mutant, StaleMutant, apply_mutant, discover
from mutants.engines.behaviour import first_difference
from mutants.mirror import mirror
from mutants.fork_server import FRESH_PROCESSES_HELP, ForkServers, for_runner
from mutants.pytest_run import Ended, Guard, PytestRun, run_pytest, run_with_timeout, tail, verdict
from mutants.runner import Result, print_table

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = REPO / "engines"


@dataclass(frozen=True)
class Engine:
    name: str  # as given to --engine: its adapter's file stem, engines/NAME.py
    package: str  # the folder under site-packages
    prefix: str  # the mutant ids' letter; "" for a gate alone (no mutants)
    adds: str = ""  # the capability this adapter adds to `base`'s adapter, which it is without it (`narrowing`)
    base: str = ""
    module: str = ""  # the adapter's module when it is not engines/NAME.py (a held-out port, mutants/ports/)

    @property
    def adapter(self) -> str:
        """The adapter's module, as --impl names it."""
        return self.module or f"engines.{self.name}"

    @property
    def xfails(self) -> Path:
        return ADAPTERS / f"{self.name}.xfails"


ENGINES = {e.name: e for e in (
    Engine("vllm_v1", "vllm", "v"),
    Engine("nano_vllm", "nanovllm", "n"),
    # vLLM's sliding-window bugs (wNN), through its SlidingWindowManager
    Engine("vllm_window", "vllm", "w", adds="sliding_window", base="vllm_v1"),
    # vLLM's retention bugs (tNN), with its served prefix_cache_retention_interval=0
    Engine("vllm_window_served", "vllm", "t", adds="sliding_window", base="vllm_v1"),
    # vLLM's hybrid and retention bugs (hNN), through its HybridKVCacheCoordinator, retention 0
    Engine("vllm_hybrid_served", "vllm", "h"),
    # vLLM's hybrid manager as our adapter configures it (dense registration): its gate alone; the hNN bugs are
    # planted through vllm_hybrid_served, whose gate covers the same calls
    Engine("vllm_hybrid", "vllm", ""),
)}


# What an adapter narrowed to the capability it adds may define beyond its base adapter's cache: how the cache is
# built. Built without the capability, its backend must be the base's class and behave as the base's cache on
# the script of mutants/engines/behaviour.py (checked by `same_as_base`).
BUILDS = {"__init__", "make_backend", "window_backend"}


def same_as_base(engine: Engine) -> str:
    """Why the engine's adapter, built without the capability it adds, may not run its base's code ("" when it
    runs it, shown): its backend is another class, a class of its own defines a method beyond BUILDS, or it
    answers a call of the script (prefix hits, forks, OutOfBlocks, evictions) otherwise than its base."""
    adapter, base_adapter = importlib.import_module(engine.adapter), importlib.import_module(ENGINES[engine.base].adapter)
    cls, base = adapter.PagedKVCache, base_adapter.PagedKVCache
    for caching in (False, True):
        mine, theirs = (type(c(8, 2, 1, 1, 2, prefix_caching=caching)._engine) for c in (cls, base))
        if mine is not theirs:
            return f"with prefix_caching={caching} and no {engine.adds}, its backend is {mine.__qualname__}, not {theirs.__qualname__}"
    own = {name for k in cls.__mro__ if k not in base.__mro__ for name, v in vars(k).items() if callable(v)} - BUILDS
    if own:
        return f"{cls.__module__}.PagedKVCache defines {', '.join(sorted(own))} beyond building the cache"
    differs = first_difference(adapter, base_adapter)
    return f"built without {engine.adds}, it does not behave as {base_adapter.__name__}: {differs}" if differs else ""


def narrowing(engine: Engine, before: list[str]) -> list[str]:
    """The pytest arguments that narrow the engine's runs (its clean gate and its mutants') to the tests that need
    the capability its adapter adds (`--needing`), when its base is gated earlier in the run (`before`): the
    other tests build no window (each passes against the base, whose constructor does not take it, or is
    marked), and the adapter built without it is the base's cache (`same_as_base`). Else none: the whole suite."""
    if not engine.adds or engine.base not in before:
        return []
    differs = same_as_base(engine)
    if differs:
        raise SystemExit(f"mutants --engine {engine.name}: cannot narrow its gate to the tests that need {engine.adds}: {differs}")
    return [f"--needing={engine.adds}"]


def engine_mutants(engine: Engine) -> list[Mutant]:
    if not engine.prefix:  # a gate alone
        return []
    return discover(__package__ or "mutants.engines", re.compile(rf"^{engine.prefix}\d\d_\w+$"))


def site_root(engine: Engine) -> Path:
    """The site-packages folder that holds the installed engine."""
    for entry in sys.path:
        if entry and (Path(entry) / engine.package).is_dir() and Path(entry).resolve() != REPO:
            candidate = Path(entry) / engine.package
            if any(candidate.iterdir()):
                return Path(entry).resolve()
    raise SystemExit(f"mutants --engine {engine.name}: {engine.package} is not installed (see ci/engines)")


def mirror_engine(site: Path, engine: Engine, dest: Path, mutant: Mutant | None = None) -> None:
    """dest/<package>: the installed engine seen through symlinks (mutants/mirror.py), the files `mutant` edits (paths
    relative to site-packages) real copies. Compiled bytecode comes along, valid for the links (they have the installed
    files' times and sizes); an edited file's is dropped from its real __pycache__ (mutants/__init__.py). An edit of a
    file outside the package is left to `apply_mutant`, which finds no such file there: a stale mutant."""
    files = [Path(edit.file) for edit in mutant.edits] if mutant else []
    edited = [str(f.relative_to(engine.package)) for f in files if f.is_relative_to(engine.package)]
    mirror(site / engine.package, dest / engine.package, edited)


def module_names(files: list[str]) -> tuple[str, ...]:
    return tuple(f.removesuffix(".py").replace("/", ".").removesuffix(".__init__") for f in files)


def gate(
    root: Path, engine: Engine, modules: tuple[str, ...], args: argparse.Namespace, tests: list[str], timeout: float | None, servers: ForkServers | None
) -> PytestRun:
    """The suite through the adapter, with the mirror at root first on PYTHONPATH; the guard imports
    the adapter and checks that `modules` (the edited ones) came from the mirror."""
    xfails = engine.xfails
    # The adapter's declared profile as text on pytest's command line: the edge to that process, which parses it.
    flags = [f"--profile={importlib.import_module(engine.adapter).PROFILE}", *([f"--xfails={xfails}"] if xfails.exists() else [])]
    return run_pytest(
        root, Guard(engine.adapter, imports=(engine.adapter,), modules=modules), tests or ["tests"],
        pythonpath=[root, REPO], cwd=REPO, workers=args.inner_jobs, flags=flags,
        # The gate's Hypothesis profile, not the mutant runners' `mutation`: NAME.xfails names the failure each
        # listed test gives under the gate's examples, and a listed property test fails on other examples with
        # another of the engine's known differences (a strict xfail then fails "another way").
        env={"PAGED_ENGINE_ONLY": engine.name, "HYPOTHESIS_PROFILE": "gate"}, timeout=timeout, servers=servers,
    )


def gate_clean(engine: Engine, tests: list[str]) -> Ended:
    """The clean run: the gate itself (`python -m paged_gate`, as ci/engines used to run before the
    mutants) on the installed, unmutated engine, under the profile its adapter declares, with its
    xfails. The mutants' suite runs are that gate's suite with one file of the engine edited, so a
    PASS here is the baseline they are scored against, and nothing is run twice. `tests`: pytest's
    arguments after the gate's `--` (a narrowed engine's `--needing`), its PARTIAL verdict then exiting 0."""
    xfails = engine.xfails
    cmd = [sys.executable, "-m", "paged_gate", "--impl", engine.adapter, *(["--xfails", str(xfails)] if xfails.exists() else [])]
    cmd += ["--partial-ok", "--", *tests] if tests else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return run_with_timeout(cmd, REPO, env, None)


def expected_survivor(m: Mutant) -> bool:
    """A mutant its notes explain as one the suite cannot see through the adapter (`SURVIVOR ...`)."""
    return m.notes.startswith("SURVIVOR")


def survivors_first(mutants: list[Mutant]) -> list[Mutant]:
    """The expected survivors first: each runs the whole suite (the longest runs), so started first they end
    beside the others' kills instead of alone after them."""
    return sorted(mutants, key=lambda m: not expected_survivor(m))


@dataclass
class EngineRun:
    """One engine's part of a run: its mutants, the clean gate's verdict, and its results when they end."""

    engine: Engine
    mutants: list[Mutant]
    code: int = 0  # 2: the clean run failed (no score)
    futures: list[Future[Result]] = field(default_factory=list)


def one(
    engine: Engine, m: Mutant, site: Path, work: Path, args: argparse.Namespace, tests: list[str], timeout: float, servers: ForkServers | None
) -> Result:
    """Plant one mutant in a fresh mirror and run the suite on it."""
    start = time.monotonic()
    root = work / m.id
    mirror_engine(site, engine, root, m)
    try:
        files = apply_mutant(m, root)
    except StaleMutant as exc:
        return Result(m.id, m.title, "error", None, time.monotonic() - start, str(exc))
    if args.plant_survivors_only and expected_survivor(m):
        shutil.rmtree(root, ignore_errors=True)
        r = Result(m.id, m.title, "not run", None, time.monotonic() - start, "an expected survivor: planted, its suite not run")
        print(f"  {m.id} not run  {r.seconds:5.1f} s  an expected survivor: planted (its edit still applies), its whole-suite run skipped", flush=True)
        return r
    status, by, detail = verdict(gate(root, engine, module_names(files), args, tests, timeout, servers), timeout)
    r = Result(m.id, m.title, status, by, time.monotonic() - start, detail)
    print(f"  {m.id} {status:8s} {r.seconds:5.1f} s  {by or detail.splitlines()[0] if detail else by or ''}", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return r


def clean_run(engine: Engine, clean: Path, args: argparse.Namespace, tests: list[str], narrowed: bool, servers: ForkServers | None) -> float | None:
    """The unmutated engine's run, printed: its seconds, or None when it fails (no score then)."""
    if tests and not narrowed:  # the tests narrowed by hand: the clean run is those tests on the mirror
        run = gate(clean, engine, (), args, tests, None, servers)
        status, by, detail = verdict(run, None)
        if status != "survived":
            print(tail(run.ended.out, 40), file=sys.stderr)
            why = f"{by} failed" if by else detail.splitlines()[0]
            print(f"mutants --engine {engine.name}: the tests do not pass on the unmutated engine ({why}); no score.", file=sys.stderr)
            return None
        print(f"clean run ({engine.name}): passed in {run.ended.seconds:.1f} s", flush=True)
        return run.ended.seconds
    ended = gate_clean(engine, tests)
    if ended.code != 0:
        print(tail(ended.out, 40), file=sys.stderr)
        print(f"mutants --engine {engine.name}: the gate does not PASS the unmutated engine (exit {ended.code}); no score.", file=sys.stderr)
        return None
    print(f"clean run ({engine.name}): the gate's verdict on the unmutated engine, in {ended.seconds:.1f} s:", flush=True)
    print("\n".join(line for line in ended.out.splitlines() if line.startswith(("=== gate verdict", "  "))), flush=True)
    if narrowed:
        base = ENGINES[engine.base]
        print(f"  PARTIAL by design: the tests that need {engine.adds}, here and in its mutants' runs; every other test "
              f"builds no {engine.adds}, and {engine.adapter} built without it runs {base.adapter}'s code (checked: its "
              f"backend's class, no method of its own but the constructor's), gated in full above ({base.name}: PASS)", flush=True)
    return ended.seconds


def score(run: EngineRun, results: list[Result], json_path: str | None) -> int:
    """Print one engine's table and score, write its JSON; 0 when every kill that should happen did."""
    engine, mutants = run.engine, run.mutants
    print(f"\n== {engine.name} (adapter {engine.adapter})")
    if not mutants:
        print(f"score (engine {engine.name}): its clean run passed; no field bugs are planted through this adapter")
        return 0
    print_table(results, False)
    killed = sum(r.status == "killed" for r in results)
    errors = [r for r in results if r.status == "error"]
    for r in errors:
        print(f"\n{r.id} error:\n{r.detail}")
    expected_survivors = {m.id for m in mutants if expected_survivor(m)}
    unexpected = [r.id for r in results if r.status == "survived" and r.id not in expected_survivors]
    not_run = [r.id for r in results if r.status == "not run"]
    for r in results:
        if r.status in ("survived", "not run"):
            note = next(m.notes for m in mutants if m.id == r.id)
            print(f"\n{r.id} {'survived' if r.status == 'survived' else 'not run (planted only)'}: {note}")
    ok = not errors and not unexpected
    seconds = sum(r.seconds for r in results)
    ran = len(results) - len(not_run)
    skipped = (f"; expected survivors planted, not run (--plant-survivors-only): {', '.join(not_run)}" if not_run else "")
    print(f"\nscore (engine {engine.name}): {killed}/{ran} run killed, {len(errors)} errors, "
          f"survivors {', '.join(r.id for r in results if r.status == 'survived') or 'none'} "
          f"({'all explained' if not unexpected else 'UNEXPECTED: ' + ', '.join(unexpected)}){skipped}, "
          f"{seconds:.1f} s of mutant runs -> {'PASS' if ok else 'FAIL'}")
    if json_path:
        Path(json_path.format(engine=engine.name)).write_text(json.dumps({
            "engine": engine.name,
            "mutants": [{"id": r.id, "title": r.title, "status": r.status, "killed_by": r.killed_by, "seconds": round(r.seconds, 1)} for r in results],
            "killed": killed, "total": len(results),
        }, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1 :]
    else:
        pytest_args = []
    parser = argparse.ArgumentParser(prog="python -m mutants --engine", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--engine", required=True, metavar="NAME[,NAME...]", help=f"one or more of {', '.join(sorted(ENGINES))}, comma-separated")
    parser.add_argument("--only", metavar="IDS")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="mutants at once")
    parser.add_argument("--inner-jobs", type=int, default=0, help="pytest -n inside each mutant run (default 0)")
    parser.add_argument("--json", metavar="PATH", help="write each engine's results as JSON; {engine} in PATH is its name")
    parser.add_argument("--timeout", type=float, default=0.0)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--fresh-processes", action="store_true", help=FRESH_PROCESSES_HELP)
    parser.add_argument(
        "--plant-survivors-only", action="store_true",
        help="plant the expected survivors (notes starting SURVIVOR) to prove their edits still apply, but skip their "
        "whole-suite runs: a survivor's run cannot change the verdict (only an unexpected survivor fails it)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.engine.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown or not names:
        parser.error(f"--engine: unknown {', '.join(unknown) or 'nothing given'}; choose from {', '.join(sorted(ENGINES))}")
    if args.json and len(names) > 1 and "{engine}" not in args.json:
        parser.error("--json: with several engines, PATH must hold {engine}")
    sys.path.insert(0, str(REPO))  # the adapters: the package engines
    runs = []
    for name in names:
        engine = ENGINES[name]
        mutants = engine_mutants(engine)
        if args.only:
            wanted = {s.strip() for s in args.only.split(",")}
            mutants = [m for m in mutants if m.id in wanted]
        runs.append(EngineRun(engine, survivors_first(mutants)))
    work = Path(tempfile.mkdtemp(prefix="engine-mutants-"))
    t0 = time.monotonic()
    # The clean runs one after the other, here; each engine's mutants go to the pool as soon as its clean run
    # passes, and run while the next engine's clean run does: the cores never wait for one long survivor.
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    servers = for_runner(args.fresh_processes)
    try:
        for i, run in enumerate(runs):
            engine = run.engine
            narrow = [] if pytest_args else narrowing(engine, [r.engine.name for r in runs[:i] if r.code == 0])
            tests = pytest_args or (["tests", *narrow] if narrow else [])
            site = site_root(engine)
            print(f"\nmutants --engine {engine.name}: {len(run.mutants)} mutants of {site / engine.package}, adapter {engine.adapter}", flush=True)
            mirror_engine(site, engine, work / f"clean-{engine.name}")
            seconds = clean_run(engine, work / f"clean-{engine.name}", args, pytest_args or narrow, bool(narrow), servers)
            if seconds is None:
                run.code = 2
                continue
            timeout = args.timeout or max(120.0, 10.0 * seconds)
            run.futures = [pool.submit(one, engine, m, site, work, args, tests, timeout, servers) for m in run.mutants]
        results = [[f.result() for f in run.futures] for run in runs]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if servers is not None:
            servers.stop()
        if args.keep:
            print(f"mirrors kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    codes = [run.code or score(run, rs, args.json) for run, rs in zip(runs, results)]
    print(f"\nengines {', '.join(names)}: {time.monotonic() - t0:.1f} s wall -> {'PASS' if not any(codes) else 'FAIL'}")
    return max(codes)
