"""A port in progress (`--xfails FILE`): the tests it is known to fail, each with the failure it expects.

One entry a line, `NODE_ID  # expects: TEXT  # WHY`: NODE_ID one test's id as pytest prints it (with its
parameters, if it has any), TEXT the failure it expects, WHY the reason, for the reader. TEXT names the
observable and both its values in the one format, `what=got, but should be want` (what a name, its
brackets balanced: `stats()['free']=3, but should be 2`), found whole in the failure's message (never
inside a longer name or number); or, for an exception that is not the suite's AssertionError, that
exception's whole first line, `Type: message`. Blank lines and lines starting with `#` are comments.

A test fails as listed when EVERY failure it reports is the listed one: each member of an exception group
(Hypothesis reports each distinct failure it found as one), so a second bug behind the listed one fails the
test. A listed test that fails another way is a failure, and so is one that passes (strict, as pytest's
`strict=True`: the entry must go). A whole file, a class, a parametrised test without its parameters, and
a test the run does not collect (in a file it collects, or in a file that is gone) are usage errors: the
first three would hide every other failure in the tests they name, the last is stale.
The suite applies the file (tests/plugins/expected_failures.py); the gate counts what it lists
(paged_gate/conformance.py): both read it with `parse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

FORMAT = "'NODE_ID  # expects: TEXT  # WHY'"
ONE_EACH = "an entry for several tests would hide every other failure among them: list each failing test's id, with the failure it expects"
OBSERVABLE = (
    "TEXT is the failure in the one format, the observable and both its values, `what=got, but should be want` "
    "(e.g. stats()['free']=3, but should be 2; request 5 (stats 0): response='ok 1', but should be 'ok 0'), "
    "or the whole first line of an exception that is not an AssertionError (e.g. DriverError: request 3 (stats 0): no answer)"
)
STALE = "names no test this run collects: take its entry off the list (or give the id the test has now)"
LISTED_PASSED = "outcome=passed, but should be the failure"  # how the suite reports a listed test that passed
_SEPARATOR = re.compile(r"\s+#\s+")
_TYPED = re.compile(r"([A-Za-z_][\w.]*): \S")  # an exception's type, as failure_message writes it, and its message
_ONE_FORMAT = re.compile(r"(?P<what>[\[(A-Za-z_].*?)=(?P<got>\S.*?), but should be (?P<want>\S.*)")
_PAIRS = {")": "(", "]": "[", "}": "{"}


@dataclass(frozen=True)
class Entry:
    """One listed test: its id, the failure it expects, why it fails, and where it is listed."""

    node: str
    expects: str
    why: str
    where: str

    def matches(self, error: BaseException) -> bool:
        """Whether a test's failure is the listed one: every failure it reports (`failures`: each member of an
        exception group) is."""
        return all(self.matches_one(failure) for failure in failures(error))

    def matches_one(self, failure: str) -> bool:
        """Whether one failure (`Type: message`) is the listed one: an exception's whole first line, or the one
        format's text found whole, neither starting nor ending inside a name or number (`blocks()=` is not
        `num_free_blocks()=`, `=4` not `=45`)."""
        if not _ONE_FORMAT.match(self.expects):
            return failure.split("\n", 1)[0] == self.expects
        return _whole(self.expects).search(failure) is not None


def _whole(text: str) -> re.Pattern[str]:
    before = r"(?<![\w.\])'\"])"
    after = r"(?!\w)" if re.search(r"\w$", text) else ""
    return re.compile(before + re.escape(text) + after)


def _balanced(text: str) -> bool:
    """Every bracket of `text` closed, in order (quotes aside: `['free']`, `(0, [1, 2])`)."""
    stack: list[str] = []
    for char in re.sub(r"'[^']*'|\"[^\"]*\"", "", text):
        if char in "([{":
            stack.append(char)
        elif char in _PAIRS and (not stack or stack.pop() != _PAIRS[char]):
            return False
    return not stack


def refusal(text: str) -> str | None:
    """Why TEXT cannot be an entry's failure (None when it can): it must name the observable and both its
    values in the one format, or be the first line of an exception that is not an AssertionError."""
    found = _ONE_FORMAT.match(text)
    if found:
        if not _balanced(found["what"]):
            return f"{found['what']!r} is not a whole observable (its brackets do not balance): {OBSERVABLE}"
        return None
    typed = _TYPED.match(text)
    if typed and typed[1].rsplit(".", 1)[-1] != "AssertionError":
        return None
    return f"{text!r} names no observable with its values: {OBSERVABLE}"


class BadEntry(ValueError):
    """A line of an xfails file that cannot be used, with its file and line and why."""


def parse(text: str, path: str) -> dict[str, Entry]:
    """The entries of an xfails file, by node id; BadEntry for a line that is not one test with its failure."""
    out: dict[str, Entry] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        parts = _SEPARATOR.split(line.strip(), maxsplit=2)
        if len(parts) != 3 or not parts[1].startswith("expects:") or not parts[1].removeprefix("expects:").strip() or not parts[2]:
            raise BadEntry(f"{where}: every entry is one test, the failure it expects and why: {FORMAT}")
        node, expects, why = parts[0], parts[1].removeprefix("expects:").strip(), parts[2].strip()
        why_not = refusal(expects)
        if why_not:
            raise BadEntry(f"{where}: {why_not}")
        name = node.split("[", 1)[0].rsplit("::", 1)[-1]
        if "::" not in node:
            raise BadEntry(f"{where}: {node} is a whole file; {ONE_EACH}")
        if name.startswith("Test"):
            raise BadEntry(f"{where}: {node} is a class; {ONE_EACH} (a machine's is CLASS::runTest)")
        if node in out:
            raise BadEntry(f"{where}: {node} is listed twice (first at {out[node].where})")
        out[node] = Entry(node, expects, why, where)
    return out


def read(path: str) -> dict[str, Entry]:
    """The entries of the xfails file at path; OSError or BadEntry when it cannot be used."""
    with open(path, encoding="utf-8") as text:
        return parse(text.read(), path)


def listed(path: str | None) -> frozenset[str]:
    """The tests an xfails file lists; none for no file, or one that cannot be read or parsed (the suite's run
    refuses such a file with a usage error, before any test)."""
    try:
        return frozenset(read(path)) if path else frozenset()
    except (OSError, BadEntry):
        return frozenset()


def refused(entries: dict[str, Entry], collected: Iterable[str], root: Path, partly: Iterable[str] = ()) -> list[str]:
    """Why each entry the run's collection refuses is: one that names several collected tests (a parametrised
    test without its parameters), and one that names none, in a file the run collected or in a file gone from
    `root` (a run narrowed to other files judges none of theirs, nor of the files `partly`, whose tests the
    command line names one by one)."""
    ids = set(collected)
    files, skipped = {node.split("::", 1)[0] for node in ids}, set(partly)
    problems = []
    for entry in entries.values():
        if entry.node in ids:
            continue
        named = [n for n in ids if n.startswith((entry.node + "::", entry.node + "["))]
        file = entry.node.split("::", 1)[0]
        if named:
            problems.append(f"{entry.where}: {entry.node} names {len(named)} tests (e.g. {min(named)}); {ONE_EACH}")
        elif (file in files and file not in skipped) or not (root / file).is_file():
            problems.append(f"{entry.where}: {entry.node} {STALE}")
    return problems


def failures(error: BaseException) -> list[str]:
    """Every failure a test's exception reports, each `Type: message`: the exception itself, or each member of
    an exception group (Hypothesis's distinct failures; a group within a group flattened)."""
    members = [member for member in getattr(error, "exceptions", None) or () if isinstance(member, BaseException)]
    if not members:
        return [f"{type(error).__name__}: {error}"]
    return [failure for member in members for failure in failures(member)]


def failure_message(error: BaseException) -> str:
    """The failure as the outcomes record keeps it: `Type: message`, and each of an exception group's members
    (Hypothesis reports several distinct failures as one group) on a line of its own."""
    lines = [f"{type(error).__name__}: {error}"]
    for member in getattr(error, "exceptions", None) or ():
        if isinstance(member, BaseException):
            lines.append(failure_message(member))
    return "\n".join(lines)
