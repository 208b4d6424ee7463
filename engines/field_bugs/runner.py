"""`python -m mutants --engine vllm|nano-vllm`: the engines' field bugs, planted back in a copy of the
installed engine, each gated through its adapter (ci/examples/engines).

The way --rust works for the Rust port, with the engine's installed source in place of ours:

1. Find the installed engine (the `vllm` or `nanovllm` folder on sys.path) and mirror it into a
   temporary folder: directories are made, every file is a symlink to the installed one (the vLLM
   wheel is 321 MB; nothing is copied).
2. Run the selected tests on the unmutated mirror: they must pass (exit 2 otherwise).
3. For each mutant (mutants/engines/vNN_*.py for vLLM, nNN_*.py for nano-vllm; each an exact edit
   of one engine file, relative to site-packages, whose old text must occur exactly once), replace
   the edited files' symlinks in a fresh mirror with edited copies, and run pytest with the mirror
   first on PYTHONPATH, so the adapter loads the mutated engine. A guard plugin checks, inside
   that pytest process, that every edited module was imported from the mirror; else `error`.
4. Verdicts as runner.py: a failed test is `killed` (by the first one), exit 0 `survived`,
   anything else `error`.

Tests (arguments after `--` replace them): the whole suite (`tests`), under the profile the adapter
declares (its PROFILE: block ids compared up to a renaming, the oracle taking the engine's choices),
with ADAPTER.xfails (the clean engine's real differences) listed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import Mutant, StaleMutant, apply_mutant
from .runner import Result, first_failure, print_table, tail

REPO = Path(__file__).resolve().parent.parent
ADAPTERS = REPO / "ci" / "examples" / "engines"


@dataclass(frozen=True)
class Engine:
    name: str  # as given to --engine
    package: str  # the folder under site-packages
    adapter: str  # the module in ci/examples/engines
    prefix: str  # the mutant ids' letter


ENGINES = {
    "vllm": Engine("vllm", "vllm", "vllm_v1", "v"),
    "nano-vllm": Engine("nano-vllm", "nanovllm", "nano_vllm", "n"),
}

GUARD_FILE = "_engine_guard.py"
GUARD_SOURCE = '''\
"""Written by mutants/engines.py: fail the run unless the edited engine modules come from the mirror."""
import os
import sys
from pathlib import Path

import pytest


def pytest_sessionstart(session):
    import importlib
    mirror = Path(os.environ["ENGINE_MUTANT_MIRROR"])
    report = Path(os.environ["ENGINE_MUTANT_REPORT"])
    importlib.import_module(os.environ["ENGINE_MUTANT_ADAPTER"])
    bad = []
    for name in filter(None, os.environ.get("ENGINE_MUTANT_MODULES", "").split(",")):
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where is None or not os.path.abspath(where).startswith(str(mirror) + os.sep):
            bad.append(f"{name} from {where}")
    if bad:
        report.write_text("MISMATCH " + "; ".join(bad) + "\\n")
        raise pytest.UsageError("engine mutants: not the mirror's engine: " + "; ".join(bad))
    report.write_text("OK\\n")


def pytest_runtest_logreport(report):
    first = Path(os.environ["MUTANTS_FIRST_FAILURE"])
    if report.failed and not first.exists():
        first.write_text(report.nodeid)
'''


def engine_mutants(engine: Engine) -> list[Mutant]:
    package = importlib.import_module(f"{__package__}.engines_bugs")
    found: list[Mutant] = []
    for info in pkgutil.iter_modules(package.__path__):
        if not (info.name.startswith(engine.prefix) and info.name[1:3].isdigit()):
            continue
        mutant = getattr(importlib.import_module(f"{package.__name__}.{info.name}"), "MUTANT", None)
        if not isinstance(mutant, Mutant) or not info.name.startswith(mutant.id + "_"):
            raise TypeError(f"{package.__name__}.{info.name} does not define a matching MUTANT")
        found.append(mutant)
    return sorted(found, key=lambda m: m.id)


def site_root(engine: Engine) -> Path:
    """The site-packages folder that holds the installed engine."""
    for entry in sys.path:
        if entry and (Path(entry) / engine.package).is_dir() and Path(entry).resolve() != REPO:
            candidate = Path(entry) / engine.package
            if any(candidate.iterdir()):
                return Path(entry).resolve()
    raise SystemExit(f"mutants --engine {engine.name}: {engine.package} is not installed (see ci/engines)")


def mirror(site: Path, engine: Engine, dest: Path) -> None:
    """dest/<package>: the installed engine's folders, every file a symlink to the installed one."""
    src = site / engine.package
    for folder, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = Path(folder).relative_to(site)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for f in files:
            if not f.endswith(".pyc"):
                os.symlink(Path(folder) / f, dest / rel / f)


def plant(mutant: Mutant, root: Path) -> list[str]:
    """Replace the symlinks of the files the mutant edits with real copies, then edit them."""
    for edit in mutant.edits:
        path = root / edit.file
        if path.is_symlink():
            text = path.read_text(encoding="utf-8")
            path.unlink()
            path.write_text(text, encoding="utf-8")
    return apply_mutant(mutant, root)


def module_names(files: list[str]) -> str:
    return ",".join(f.removesuffix(".py").replace("/", ".").removesuffix(".__init__") for f in files)



def run(root: Path, engine: Engine, modules: str, args: argparse.Namespace, pytest_args: list[str], timeout: float | None) -> tuple[int | None, str, Path, float]:
    junit, report, first = root / "junit.xml", root / "guard-report.txt", root / "first-failure.txt"
    for stale in (junit, report, first):
        stale.unlink(missing_ok=True)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(root), str(ADAPTERS), str(REPO)]),
        HYPOTHESIS_PROFILE="mutation",
        PAGED_IMPL=engine.adapter,
        PAGED_ENGINE_ONLY=engine.adapter,
        PYTHONDONTWRITEBYTECODE="1",
        ENGINE_MUTANT_MIRROR=str(root),
        ENGINE_MUTANT_REPORT=str(report),
        ENGINE_MUTANT_ADAPTER=engine.adapter,
        ENGINE_MUTANT_MODULES=modules,
        MUTANTS_FIRST_FAILURE=str(first),
    )
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("CI", None)
    profile = [f"--profile={importlib.import_module(engine.adapter).PROFILE}"]
    xfails = ADAPTERS / f"{engine.adapter}.xfails"
    cmd = [
        sys.executable, "-m", "pytest", "-x", "-p", "no:cacheprovider", "-n", str(args.inner_jobs), "-q", "--no-header",
        "-p", "_engine_guard", f"--impl={engine.adapter}", f"--junitxml={junit}", *profile,
        *([f"--xfails={xfails}"] if xfails.exists() else []), *(pytest_args or ["tests"]),
    ]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        code: int | None = proc.returncode
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        code, out = None, exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    return code, out, junit, time.monotonic() - start


def verdict(code: int | None, out: str, root: Path, junit: Path, timeout: float | None) -> tuple[str, str | None, str]:
    report = root / "guard-report.txt"
    if code is None:
        return "error", None, f"timed out after {timeout:.0f} s"
    if not report.exists() or not report.read_text().startswith("OK"):
        return "error", None, f"guard: {report.read_text().strip() if report.exists() else 'did not run'}\n{tail(out)}"
    if code == 0:
        return "survived", None, ""
    if code == 1:
        failed = first_failure(root, junit)
        return ("killed", failed, "") if failed else ("error", None, f"pytest exit 1 but no failed test\n{tail(out)}")
    return "error", None, f"pytest exit {code}\n{tail(out)}"


def main(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1 :]
    else:
        pytest_args = []
    parser = argparse.ArgumentParser(prog="python -m mutants --engine", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", required=True, choices=sorted(ENGINES))
    parser.add_argument("--only", metavar="IDS")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="mutants at once")
    parser.add_argument("--inner-jobs", type=int, default=0, help="pytest -n inside each mutant run (default 0)")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--timeout", type=float, default=0.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    engine = ENGINES[args.engine]
    sys.path.insert(0, str(ADAPTERS))
    mutants = engine_mutants(engine)
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        mutants = [m for m in mutants if m.id in wanted]
    site = site_root(engine)
    work = Path(tempfile.mkdtemp(prefix=f"engine-mutants-{engine.package}-"))
    t0 = time.monotonic()
    try:
        clean = work / "clean"
        mirror(site, engine, clean)
        (clean / GUARD_FILE).write_text(GUARD_SOURCE, encoding="utf-8")
        print(f"mutants --engine {engine.name}: {len(mutants)} mutants of {site / engine.package}, adapter {engine.adapter}", flush=True)
        code, out, junit, clean_s = run(clean, engine, "", args, pytest_args, None)
        if code != 0:
            print(tail(out, 40), file=sys.stderr)
            print(f"mutants --engine: the tests do not pass on the unmutated engine (pytest exit {code}); no score.", file=sys.stderr)
            return 2
        print(f"clean run: passed in {clean_s:.1f} s", flush=True)
        timeout = args.timeout or max(120.0, 10.0 * clean_s)

        def one(m: Mutant) -> Result:
            start = time.monotonic()
            root = work / m.id
            mirror(site, engine, root)
            (root / GUARD_FILE).write_text(GUARD_SOURCE, encoding="utf-8")
            try:
                files = plant(m, root)
            except StaleMutant as exc:
                return Result(m.id, m.title, "error", None, time.monotonic() - start, str(exc))
            code, out, junit, _ = run(root, engine, module_names(files), args, pytest_args, timeout)
            status, by, detail = verdict(code, out, root, junit, timeout)
            r = Result(m.id, m.title, status, by, time.monotonic() - start, detail)
            print(f"  {m.id} {status:8s} {r.seconds:5.1f} s  {by or detail.splitlines()[0] if detail else by or ''}", flush=True)
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
            return r

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(one, mutants))
    finally:
        if args.keep:
            print(f"mirrors kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print_table(results, False)
    killed = sum(r.status == "killed" for r in results)
    errors = [r for r in results if r.status == "error"]
    for r in errors:
        print(f"\n{r.id} error:\n{r.detail}")
    expected_survivors = {m.id for m in mutants if m.notes.startswith("SURVIVOR")}
    unexpected = [r.id for r in results if r.status == "survived" and r.id not in expected_survivors]
    for r in results:
        if r.status == "survived":
            note = next(m.notes for m in mutants if m.id == r.id)
            print(f"\n{r.id} survived: {note}")
    ok = not errors and not unexpected
    print(f"\nscore (engine {engine.name}): {killed}/{len(results)} killed, {len(errors)} errors, "
          f"survivors {', '.join(r.id for r in results if r.status == 'survived') or 'none'} "
          f"({'all explained' if not unexpected else 'UNEXPECTED: ' + ', '.join(unexpected)}), "
          f"{time.monotonic() - t0:.1f} s wall -> {'PASS' if ok else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "engine": engine.name,
            "mutants": [{"id": r.id, "title": r.title, "status": r.status, "killed_by": r.killed_by, "seconds": round(r.seconds, 1)} for r in results],
            "killed": killed, "total": len(results),
        }, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1
