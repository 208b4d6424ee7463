"""One home for broken implementations (issue 50): mutants/ (ports/, window_ports/, drivers/, the planted
patches). No module of meta_tests/, tests/ or ci/ writes a cache of its own, except the few in ALLOWED, each
with why it is not a broken one.

Read from the AST: a class is a cache when it is named PagedKVCache, derives from a class whose name ends in
KVCache (paged's, the oracle's) or from a cache of its own module, or defines one of the contract's calls; a
string is one when it holds `class PagedKVCache` (a module written to a file). A broken cache goes to
mutants/ports/ as a module with its docstring, imported from there (`mutants.ports.NAME`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.oracle

ROOT = Path(__file__).resolve().parent.parent
CALLS = {"add_seq", "append", "gather", "fork", "free", "block_table", "seq_len", "num_free_blocks", "stats"}

# path::owner (a class's name; for a written module, the function or constant that holds its text): why it stays.
ALLOWED = {
    "meta_tests/explorer/test_explorer.py::_RunFlags":
        "answers every call as paged does; keeps a flag per sequence, state the explorer's copier must carry",
    "meta_tests/explorer/test_explorer.py::_KeepsTheRunFlag":
        "answers every call as paged does (no call reads the stale flag): a fixture of the copier's check",
    "meta_tests/explorer/test_explorer.py::test_a_window_the_port_does_not_announce_walks_nothing_and_says_so":
        "paged without the sliding_window keyword: right on what it announces, the walk of the window is refused",
    "meta_tests/wire/test_wire.py::test_the_client_sends_the_window_and_reads_released_entries":
        "paged without the sliding_window keyword: its driver must not announce the window",
    "meta_tests/wire/test_wire.py::Hybrid":
        "records what its constructor was given, for the server's reading of `new`: no cache",
    "meta_tests/test_require.py::NO_HYBRID":
        "paged without layer_windows: it passes what it announces; --require hybrid refuses it",
    "meta_tests/test_gate.py::NO_PREFIX":
        "paged without prefix_caching: the gate passes it, saying what was not tested",
    "tests/machines/cache.py::CacheMachine": "the state machine: its rules are named after the calls they make",
    "tests/oracle_ids.py::TablesOnly": "the suite's oracle under allocation=any: the model's tables",
    "tests/oracle_ids.py::OracleIdsCache": "the suite's oracle under allocation=any: ids renamed to the cache's",
    "tests/oracle_ids.py::PagedKVCache": "the suite's oracle under allocation=any, as an implementation module",
    "tests/programs.py::InStep": "the cache under test in step with the model, for the toy decoder",
    "tests/test_attention.py::KernelTwin": "the cache under test beside the contiguous one, checking each decode",
    "ci/examples/free_queue.py::PagedKVCache": "an example of a correct port (allocation=any): the gate passes it",
}


def caches(tree: ast.Module) -> list[str]:
    """The owners of the caches written in a module: each cache class's name, and for a string holding
    `class PagedKVCache`, the function or module-level constant it is in."""
    found: list[str] = []
    classes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b) for b in node.bases]
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if node.name == "PagedKVCache" or methods & CALLS or any(b.endswith("KVCache") or b in classes for b in bases):
                classes.add(node.name)
                found.append(node.name)
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = stmt.name
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
        else:
            continue
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "class PagedKVCache" in n.value for n in ast.walk(stmt)):
            found.append(name)
    return found


def written_here() -> set[str]:
    """Every cache written in meta_tests/, tests/ or ci/ (this module's examples of them aside), as `path::owner`."""
    seen: set[str] = set()
    for path in sorted(p for folder in ("meta_tests", "tests", "ci") for p in (ROOT / folder).rglob("*.py")):
        if path.resolve() == Path(__file__).resolve():
            continue
        for owner in caches(ast.parse(path.read_text(encoding="utf-8"))):
            seen.add(f"{path.relative_to(ROOT).as_posix()}::{owner}")
    return seen


def test_no_broken_cache_is_written_outside_mutants() -> None:
    seen = written_here()
    assert "tests/oracle_ids.py::OracleIdsCache" in seen, f"the scan found none of the caches it should: {sorted(seen)}"
    stray = [f"{key}: a cache written here, but should be in mutants/ports (or in ALLOWED with why)" for key in seen if key not in ALLOWED]
    stale = [f"{key}: in ALLOWED, but should be a cache written there" for key in ALLOWED if key not in seen]
    assert not stray and not stale, "\n".join(stray + stale)


def test_the_scan_sees_each_way_of_writing_a_cache() -> None:
    """A subclass of paged's cache, a subclass of that, a wrapper that answers a call, and a module written
    as text, in a function or a constant; a plain class and a string that names no class are not caches."""
    source = (
        "import paged\n"
        "class Broken(paged.PagedKVCache):\n    pass\n"
        "class Worse(Broken):\n    pass\n"
        "class Wrapper:\n    def seq_len(self, s):\n        return 1\n"
        "class Plain:\n    def size(self):\n        return 1\n"
        "TEXT = 'from paged import PagedKVCache as Base\\nclass PagedKVCache(Base):\\n    pass\\n'\n"
        "NOTE = 'a PagedKVCache'\n"
        "def test_x(tmp_path):\n    (tmp_path / 'm.py').write_text('class PagedKVCache:\\n    pass\\n')\n"
    )
    assert caches(ast.parse(source)) == ["Broken", "Worse", "Wrapper", "TEXT", "test_x"]
