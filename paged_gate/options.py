"""The gate's command line: its options, parsed, with paths made absolute (pytest runs in the suite's
folder) without following symlinks (a venv's `bin/python` must stay the venv's)."""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

from wire.target import driver
from wire.target import parse as parse_impl

from paged_gate.target import OPTIONAL


@dataclass
class Options:
    """The parsed command line; `extra` is what follows `--`, for pytest; `channel` and `prog` are given
    to the gate's worker process by its supervisor (paged_gate.supervise)."""

    impl: str
    xfails: str | None
    replay: str | None
    vectors: bool
    transcript_out: str | None
    all_failures: bool
    mutmut: bool
    profile: str | None
    exhaustive: bool
    depth: int
    junit_xml: str | None
    coverage: bool
    partial_ok: bool
    timeout: float
    extra: list[str]
    require: frozenset[str] = frozenset()  # --require: the capabilities the implementation must announce
    also_renamed: bool = False  # --also-renamed: the explorer also checks every table up to a renaming of block ids
    channel: int | None = None
    prog: str | None = None

    @property
    def runs_suite(self) -> bool:
        """The conformance suite (pytest) is a step: neither --vectors, --replay nor --exhaustive."""
        return not (self.replay or self.vectors or self.exhaustive)

    @property
    def ours(self) -> bool:
        """Our own paged, gated whole: the planted mutants too."""
        return self.impl == "paged" and self.runs_suite


def parser(prog: str, usage: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="The gate a port's CI calls: one command, a short verdict, the exit code is the verdict.",
        epilog=usage, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--impl", default="paged", help="module under test (exports PagedKVCache, OutOfBlocks), or exec:CMD for a driver; default: paged")
    p.add_argument("--xfails", metavar="FILE", help="tests expected to fail: one test id a line, 'NODE_ID  # expects: TEXT  # WHY' (docs/GATING.md)")
    p.add_argument("--replay", metavar="FILE", help="replay one transcript against the implementation, and nothing else")
    p.add_argument("--vectors", action="store_true", help="replay the conformance vectors (ci/vectors/*.txt), and nothing else")
    p.add_argument("--transcript-out", metavar="PATH", help="where the first failure's calls are written (default: a new temporary folder)")
    p.add_argument("--all-failures", action="store_true", help="run every step and every test; by default the first failure ends the run")
    p.add_argument("--mutmut", action="store_true", help="also run the mutmut score (ci/mutation; a source checkout only)")
    p.add_argument("--profile", metavar="OPTION=VALUE[,...]", help="the port's profile (docs/CONTRACT.md, Profiles); default: the one it declares")
    p.add_argument("--exhaustive", action="store_true", help="the bounded exhaustive explorer on tiny pools (explorer/, docs/EXHAUSTIVE.md), and nothing else")
    p.add_argument("--depth", type=int, default=6, help="--exhaustive: every model state within this many calls (default 6)")
    p.add_argument("--also-renamed", action="store_true",
                   help="--exhaustive under an allocation=lowest-free profile: also check every table up to a renaming of block ids, "
                   "allocation=any's check (one walk for both)")
    p.add_argument("--junit-xml", metavar="PATH", help="also write every step's tests as JUnit XML to PATH")
    p.add_argument("--coverage", action="store_true", help="also print each state machine's coverage table: behaviours, examples reaching them, share, floor")
    p.add_argument("--partial-ok", action="store_true", help="a PARTIAL verdict (the suite narrowed after --) exits 0, not 3")
    p.add_argument("--timeout", type=float, default=3600.0, metavar="SECONDS",
                   help="the longest a step that runs the implementation may take before the gate stops it: CANNOT RUN (default 3600; 0: no limit)")
    p.add_argument("--require", metavar="CAPS", action="append", default=[],
                   help=f"capabilities the implementation must announce, comma-separated ({', '.join(OPTIONAL)}); one it does not is a FAIL naming it")
    p.add_argument("--channel", type=int, help=argparse.SUPPRESS)
    p.add_argument("--prog", help=argparse.SUPPRESS)
    return p


def parse(argv: list[str], prog: str = "paged-gate", usage: str = "") -> Options:
    """The options; paths are made absolute, since pytest runs in the suite's folder."""
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    p = parser(prog, usage)
    a = p.parse_args(argv)
    require = frozenset(word.strip() for text in a.require for word in text.split(",") if word.strip())
    unknown = sorted(require - OPTIONAL.keys())
    if unknown:
        p.error(f"--require: {', '.join(unknown)} is no capability; the capabilities are {', '.join(OPTIONAL)}")
    if a.also_renamed and not a.exhaustive:
        p.error("--also-renamed is an option of --exhaustive: it adds a check to the explorer's walk")
    return Options(
        impl=anchored(a.impl), xfails=absolute(a.xfails), replay=absolute(a.replay), vectors=a.vectors, transcript_out=absolute(a.transcript_out),
        all_failures=a.all_failures, mutmut=a.mutmut, profile=a.profile, exhaustive=a.exhaustive, depth=a.depth,
        junit_xml=absolute(a.junit_xml), coverage=a.coverage, partial_ok=a.partial_ok, timeout=a.timeout, extra=extra, require=require,
        also_renamed=a.also_renamed, channel=a.channel, prog=a.prog,
    )


def absolute(path: str | None) -> str | None:
    """The path made absolute as it is written: `os.path.abspath`, which follows no symlink."""
    return None if path is None else os.path.abspath(path)


def anchored(impl: str) -> str:
    """An `exec:` command whose words that name a file here made absolute (the suite starts the driver
    from its own folder), without following symlinks: `VENV/bin/python` stays the venv's interpreter, not
    the base one it links to. A module name, or a folder (`--impl paged` in a checkout), as it is."""
    command = parse_impl(impl).command
    if command is None:
        return impl
    return driver(shlex.join(os.path.abspath(w) if not w.startswith("-") and Path(w).is_file() else w for w in shlex.split(command))).text
