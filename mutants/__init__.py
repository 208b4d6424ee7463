"""Planted bugs as small exact text changes to real source: the seed's pitfalls s01 to s13, then
the bugs after them in `paged` (s14..: integer widths, prefix caching, renaming; mutants/README.md
lists them all), and their transposition to the Rust port in `mutants.rust` (rNN).

Each `sNN_*.py` module in this package defines one `MUTANT`: the pitfall's name as the
seed (section 5) gives it, its symptom, the catalog tests the seed says catch it, and
the edits that plant it. An edit is (file, old text, new text); the old text must occur
exactly once in the current source, or the mutant is stale, which is an error: never a
kill, never skipped. `apply_mutant` edits a copy; nothing here ever writes to the work
tree. `python -m mutants` scores the suite against all of them (see runner.py); `python -m
mutants --engine NAME` (an adapter's file stem, engines/NAME.py) plants the real engines' field bugs (mutants/engines/).

mutmut 3 also works in this folder (it hard-codes ./mutants/); its copies land in
mutants/paged, mutants/tests, mutants/oracle and mutants/pyproject.toml, which git ignores.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Edit", "Mutant", "StaleMutant", "all_mutants", "apply_mutant", "check_mutant", "discover"]


class StaleMutant(Exception):
    """A mutant's old text does not occur exactly once in the source it should change."""


@dataclass(frozen=True)
class Edit:
    """Replace `old` (which must occur exactly once) with `new` in `file` (relative to the repo root)."""

    file: str
    old: str
    new: str


@dataclass(frozen=True)
class Mutant:
    id: str  # "s01", ... or "r01", ...
    title: str  # the pitfall's name (mutants/README.md's table)
    symptom: str  # the seed's symptom column
    caught_by: tuple[str, ...]  # the catalog tests the seed names
    edits: tuple[Edit, ...]
    notes: str = field(default="")


# The two sets: the seed's pitfalls planted in paged/ (sNN, this package) and their transposition,
# with width bugs, planted in the Rust port ci/examples/rust (rNN, the mutants.rust package).
KINDS = {"python": (__name__, re.compile(r"^s\d\d_\w+$")), "rust": (f"{__name__}.rust", re.compile(r"^r\d\d_\w+$"))}


def all_mutants(kind: str = "python") -> list[Mutant]:
    """Every planted mutant of one kind, in id order."""
    return discover(*KINDS[kind])


def discover(package_name: str, pattern: re.Pattern[str]) -> list[Mutant]:
    """The mutants of a package (its modules whose names match `pattern`), in id order; each module
    must define MUTANT with a matching id."""
    package = importlib.import_module(package_name)
    found: list[Mutant] = []
    for info in pkgutil.iter_modules(package.__path__):
        if not pattern.match(info.name):
            continue
        module = importlib.import_module(f"{package_name}.{info.name}")
        mutant = getattr(module, "MUTANT", None)
        if not isinstance(mutant, Mutant):
            raise TypeError(f"{package_name}.{info.name} does not define MUTANT = Mutant(...)")
        if not info.name.startswith(mutant.id + "_"):
            raise ValueError(f"{package_name}.{info.name} defines mutant {mutant.id!r}")
        found.append(mutant)
    found.sort(key=lambda m: m.id)
    ids = [m.id for m in found]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate mutant ids: {ids}")
    return found


def check_mutant(mutant: Mutant, root: Path) -> None:
    """Raise StaleMutant unless every edit's old text occurs exactly once in the files under `root`.

    Edits of one file apply in order, each to the text the previous one left.
    """
    texts: dict[str, str] = {}
    for edit in mutant.edits:
        _apply_edit(mutant, edit, texts, root)


def apply_mutant(mutant: Mutant, root: Path) -> list[str]:
    """Plant `mutant` in the copy of the repo at `root` (never the work tree); return the files changed."""
    texts: dict[str, str] = {}
    for edit in mutant.edits:
        _apply_edit(mutant, edit, texts, root)
    for name, text in texts.items():
        path = root / name
        path.write_text(text, encoding="utf-8")
        # The copy may hold bytecode compiled from the unmutated file (the clean run's, or a mirror's link to the
        # installed one): dropped, so Python and pytest's assertion rewriter compile the edited source.
        for stale in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
            stale.unlink()
    return sorted(texts)


def _apply_edit(mutant: Mutant, edit: Edit, texts: dict[str, str], root: Path) -> None:
    if edit.old == edit.new:
        raise StaleMutant(f"{mutant.id}: an edit of {edit.file} changes nothing")
    if edit.file not in texts:
        path = root / edit.file
        if not path.is_file():
            raise StaleMutant(f"{mutant.id}: {edit.file} does not exist")
        texts[edit.file] = path.read_text(encoding="utf-8")
    count = texts[edit.file].count(edit.old)
    if count != 1:
        first = edit.old.strip().splitlines()[0] if edit.old.strip() else repr(edit.old)
        raise StaleMutant(
            f"{mutant.id}: stale, the old text occurs {count} times in {edit.file} (must be once): {first!r}"
        )
    texts[edit.file] = texts[edit.file].replace(edit.old, edit.new)
