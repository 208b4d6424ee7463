"""ci/mutation's check of docs/MUTMUT.md: which mutants the document explains (full names and the `_N` short
form), the lines it prints for a mutant not explained and for a stale row, and that every name the document
explains is a mutant of a function that paged/ holds (a misspelt name would never match a listed mutant)."""

from __future__ import annotations

import importlib
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ci_mutation() -> ModuleType:
    """ci/mutation, a script without a .py suffix, loaded as a module (its main() does not run)."""
    loader = SourceFileLoader("ci_mutation", str(ROOT / "ci" / "mutation"))
    spec = spec_from_loader("ci_mutation", loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)
    return module


DOCUMENT = """Prose naming `paged.a.x_f__mutmut_9` is not a row.

| mutant | change | why |
| --- | --- | --- |
| `paged.a.x_f__mutmut_1`, `_3`; `paged.b.xǁCǁg__mutmut_2`, `_12` | `x` for `_4` | names in other cells: `paged.a.x_f__mutmut_7` |
| `paged.a.x_h__mutmut_5` (timeout) | a | b |
"""


def test_explained_reads_full_names_and_the_short_form() -> None:
    names = ci_mutation().explained(DOCUMENT)
    assert names == {"paged.a.x_f__mutmut_1", "paged.a.x_f__mutmut_3", "paged.b.xǁCǁg__mutmut_2", "paged.b.xǁCǁg__mutmut_12", "paged.a.x_h__mutmut_5"}


def test_a_short_form_before_any_full_name_is_refused() -> None:
    with pytest.raises(ValueError, match="`_3` comes before any full mutant name"):
        ci_mutation().explained("| `_3`, `paged.a.x_f__mutmut_1` | a | b |\n")


def test_unexplained_names_each_missing_and_each_stale_mutant() -> None:
    listed = ["paged.a.x_f__mutmut_1", "paged.a.x_f__mutmut_3", "paged.b.xǁCǁg__mutmut_2", "paged.a.x_h__mutmut_5", "paged.z.x_new__mutmut_8"]
    assert ci_mutation().unexplained(listed, DOCUMENT) == [
        "not explained in docs/MUTMUT.md: paged.z.x_new__mutmut_8",
        "stale in docs/MUTMUT.md (explained there, but not listed as not killed): paged.b.xǁCǁg__mutmut_12",
    ]
    assert ci_mutation().unexplained(sorted(ci_mutation().explained(DOCUMENT)), DOCUMENT) == []


def test_every_mutant_docs_mutmut_explains_is_of_a_function_of_paged() -> None:
    """Each name is module.x_function__mutmut_N or module.xǁClassǁmethod__mutmut_N of a function paged/ holds."""
    names = ci_mutation().explained((ROOT / "docs" / "MUTMUT.md").read_text())
    assert names, "docs/MUTMUT.md explains no mutant: this test checks nothing"
    missing = []
    for name in sorted(names):
        module_name, _, function = name.rsplit("__mutmut_", 1)[0].rpartition(".")
        target: object = importlib.import_module(module_name)
        path = function.split("ǁ")[1:] if function.startswith("xǁ") else [function.removeprefix("x_")]
        for part in path:
            target = getattr(target, part, None)
        if not callable(target):
            missing.append(name)
    assert missing == [], f"names in docs/MUTMUT.md of no function of paged/: {missing}"
