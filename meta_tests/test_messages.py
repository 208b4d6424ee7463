"""The suite's own rule, kept: every check of a port's answer fails in the one format.

`what=got, but should be want [call]` (tests/assertions.py). A bare `assert` on a port's answer
fails as pytest rewrites it (`assert False where same_bits(array([[[40.],...`), a NumPy testing
call as NumPy words it ("Not equal to tolerance"), and `pytest.raises` as "DID NOT RAISE" with no
call: none of them says which call, or what the port answered against what the oracle did. So the
code that drives the implementation under test (every module under tests/ but the few self-tests
left there, listed below; the suite's tests of itself are in meta_tests/) uses the helpers of tests/assertions.py, and this test parses it (`ast`)
to find any of the three. Marked `oracle`: it reads the suite, not the implementation.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.oracle

TESTS = Path(__file__).resolve().parent.parent / "tests"  # the conformance tests (meta_tests/ holds no check of a port)

# Modules that never drive the implementation under test, each with why (besides those marked `oracle`
# or `gate` as a whole, which this test finds itself).
SELF_TESTS = {
    "conftest.py": "loads the plugins: no checks",
    "machines/observe.py": "counts the behaviours an example reached, from the oracle's side, never a port's answer",
    "machines/coverage.py": "the suite's own coverage against its floors (its message is the table), never a port's answer",
}
# Functions, in modules that otherwise drive the implementation, that check something else, each with why.
SELF_TEST_FUNCTIONS = {
    "test_allocation.py::test_the_allocator_names_its_callers_bug": "paged's own allocator, run only on paged: no port's answer",
}


def marked(decorators: list[ast.expr], names: set[str]) -> bool:
    """Whether one of the decorators (or a module's pytestmark value) is `pytest.mark.NAME` for a NAME given."""
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in names and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                return True
    return False


def self_test_module(tree: ast.Module) -> bool:
    """A module whose `pytestmark` is `oracle` or `gate`: the suite's own machinery, or the gate's."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return marked([node.value], {"oracle", "gate"})
    return False


def narrows_the_oracle(node: ast.Assert) -> bool:
    """`assert self.model is not None` (or `model`): narrowing the oracle's type for mypy, no check of a port."""
    test = node.test
    return (
        node.msg is None
        and isinstance(test, ast.Compare)
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and ast.unparse(test.left) in ("self.model", "model")
    )


def breaches(path: Path, root: Path = TESTS) -> list[str]:
    """Every bare assert, NumPy testing call and pytest.raises in the module's code that drives the implementation
    (`path` under `root`, the tests folder)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    name = path.relative_to(root).as_posix()
    if name in SELF_TESTS or self_test_module(tree):
        return []
    exempt: set[int] = set()  # lines of functions that check something else
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if marked(node.decorator_list, {"oracle"}) or f"{name}::{node.name}" in SELF_TEST_FUNCTIONS:
                exempt.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) in exempt:
            continue
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Assert) and not narrows_the_oracle(node):
            found.append(f"{where}: bare assert {ast.unparse(node.test)[:80]} (use tests/assertions.py)")
        elif isinstance(node, ast.Attribute) and node.attr == "testing" and ast.unparse(node.value) in ("np", "numpy"):
            found.append(f"{where}: {ast.unparse(node)} (its failure is NumPy's text; compare bits with assert_same_bits or assert_equal)")
        elif isinstance(node, ast.Attribute) and node.attr == "raises" and ast.unparse(node.value) == "pytest":
            found.append(f"{where}: pytest.raises (\"DID NOT RAISE\" names no call; use assert_raises)")
        elif isinstance(node, ast.ImportFrom) and (
            (node.module or "").startswith("numpy.testing") or (node.module == "pytest" and any(a.name == "raises" for a in node.names))
        ):
            found.append(f"{where}: from {node.module} import ... (use tests/assertions.py)")
        elif isinstance(node, ast.Import) and any(a.name.startswith("numpy.testing") for a in node.names):
            found.append(f"{where}: import numpy.testing (use tests/assertions.py)")
    return found


def test_every_check_of_a_ports_answer_is_in_the_one_format() -> None:
    modules = sorted(p for p in TESTS.rglob("*.py") if ".venv" not in p.parts)
    assert any(p.name == "test_catalog.py" for p in modules), f"found no test modules under {TESTS}"
    found = [line for path in modules for line in breaches(path)]
    assert not found, "checks outside the one format:\n" + "\n".join(found)


def test_the_rule_sees_each_breach(tmp_path: Path) -> None:
    """The parser finds each kind of breach, and lets the oracle's narrowing and the self-tests be."""
    module = tmp_path / "test_example.py"
    module.write_text(
        "def test_a(impl):\n"
        "    assert same_bits(k, v)\n"
        "    np.testing.assert_allclose(a, b)\n"
        "    with pytest.raises(ValueError):\n"
        "        cache.add_seq(0)\n"
        "    assert self.model is not None\n"
        "@pytest.mark.oracle\n"
        "def test_b():\n"
        "    assert 1 == 1\n"
        "from numpy.testing import assert_array_equal\n"
        "from pytest import raises\n"
        "import numpy.testing as npt\n"
    )
    found = breaches(module, tmp_path)
    assert sorted(int(line.split(":")[1]) for line in found) == [2, 3, 4, 10, 11, 12], found
