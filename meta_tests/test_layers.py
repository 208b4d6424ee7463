"""The gate drives the suite in one direction, and the implementation's name is taken apart once.

Read from the code (the imports and the string constants of each module): the suite (tests/) and what it
shares with the gate (testkit/) import nothing of the gate (paged_gate/); the shared part and the layers
below it (wire/, explorer/) import neither the suite nor the gate; `exec:` appears in one module of them,
wire/target.py. And the suite's side of "no work twice": `--covered` deselects exactly the tests that would
replay a vector or walk a geometry the gate's early steps ran, and the outcomes record counts them.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import explorer
from testkit.locate import vector_files
from testkit.outcomes import read
from wire.target import parse

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("wire", "explorer", "testkit", "tests", "paged_gate")


def imported(folder: str) -> dict[str, set[str]]:
    """Each module of the folder (relative path): the top-level packages it imports, at any depth of its code."""
    out: dict[str, set[str]] = {}
    for source in sorted((ROOT / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        out[source.relative_to(ROOT).as_posix()] = names
    return out


def test_the_suite_never_imports_the_gate_and_the_layers_below_import_neither() -> None:
    forbidden = {"tests": {"paged_gate"}, "testkit": {"paged_gate", "tests"}, "explorer": {"paged_gate", "tests", "testkit"},
                 "wire": {"paged_gate", "tests", "testkit", "explorer"}}
    wrong = [f"{module} imports {', '.join(sorted(names & forbidden[folder]))}"
             for folder in forbidden for module, names in imported(folder).items() if names & forbidden[folder]]
    assert imported("tests") and imported("testkit"), "no module read: this test checks nothing"
    assert not wrong, "\n".join(wrong)


def test_exec_is_taken_apart_in_one_module() -> None:
    """No string constant `exec:` (nor one starting with it) outside wire/target.py, in the layers that reach an implementation."""
    found = sorted(
        f"{source.relative_to(ROOT).as_posix()}:{node.lineno}"
        for folder in LAYERS for source in (ROOT / folder).rglob("*.py")
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("exec:")
    )
    assert [f for f in found if not f.startswith("wire/target.py:")] == [], found
    assert found, "wire/target.py has no `exec:`: this test checks nothing"
    assert (parse("exec: ./d --x").command, parse("paged").command, parse("exec:./d").driver) == ("./d --x", None, True)


def test_covered_deselects_what_the_gate_ran_and_the_record_counts_it(tmp_path: Path) -> None:
    """A vector named in --covered and a geometry walked to depth 3 are deselected; a geometry walked only to
    depth 2 is not (the suite walks 3), nor is any other vector; the record says how many the gate covered."""
    vectors = [p for p in vector_files() if not p.name.startswith("range-")]
    first, second, third = explorer.EVERY_GEOMETRY[:3]
    covered = tmp_path / "covered.json"
    covered.write_text(json.dumps({"vectors": [vectors[0].name], "walks": {first.name: 3, second.name: 2}}))
    record = tmp_path / "outcomes.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", "--co", "-o", "testpaths=tests",
           f"--covered={covered}", f"--outcomes={record}", "tests/test_vectors.py", "tests/test_exhaustive.py"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    written = read(record)
    assert written is not None, run.stdout[-2000:] + run.stderr[-2000:]
    gone = {f"tests/test_vectors.py::test_vector[{vectors[0].stem}]", f"tests/test_exhaustive.py::test_every_short_sequence_agrees[{first.name}]"}
    kept = {f"tests/test_vectors.py::test_vector[{vectors[1].stem}]", f"tests/test_exhaustive.py::test_every_short_sequence_agrees[{second.name}]",
            f"tests/test_exhaustive.py::test_every_short_sequence_agrees[{third.name}]"}
    assert (written.covered, written.deselected) == (2, 2), (written.covered, written.deselected)
    assert not gone & set(written.selected) and kept <= set(written.selected), sorted(written.selected)[:5]
