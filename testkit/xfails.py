"""A port in progress (`--xfails FILE`): the tests it is known to fail, each with the failure it expects.

One entry a line, `NODE_ID  # expects: TEXT  # WHY`: NODE_ID one test's id as pytest prints it (with its
parameters, if it has any), TEXT a part of the failure's message (the exception's type and text, as
`failure_message` makes it) that names what differs (`what=got`, or `Type: message`; found whole, never
inside a longer name), WHY the reason, for the reader. Blank lines and lines starting with `#`
are comments. A whole file, a class, or a parametrised test without its parameters cannot be listed:
each would hide every other failure in the tests it names. A listed test that fails with TEXT in its
message is an expected failure; one that fails another way is a failure, and so is one that passes (strict, as pytest's
`strict=True`: the entry must go). The suite applies the file (tests/plugins/expected_failures.py); the gate
counts what it lists (paged_gate/conformance.py): both read it with `parse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

FORMAT = "'NODE_ID  # expects: TEXT  # WHY'"
ONE_EACH = "an entry for several tests would hide every other failure among them: list each failing test's id, with the failure it expects"
OBSERVABLE = (
    "TEXT is the part of the failure's message that says what differs, `what=got` (e.g. stats()['free']=, "
    "response='ok 1'), or an exception's type and the start of its message (e.g. DriverError: request 3)"
)
LISTED_PASSED = "outcome=passed, but should be the failure"  # how the suite reports a listed test that passed
_SEPARATOR = re.compile(r"\s+#\s+")
_TYPED = re.compile(r"[A-Za-z_][\w.]*: \S")  # an exception's type, as failure_message writes it, and its message


@dataclass(frozen=True)
class Entry:
    """One listed test: its id, the text its failure must contain, why it fails, and where it is listed."""

    node: str
    expects: str
    why: str
    where: str

    def matches(self, message: str) -> bool:
        """Whether a failure's message (`failure_message`) is the listed one: TEXT found whole, neither
        starting nor ending inside a name (`Error` is not `AssertionError`, `blocks()=` not `num_free_blocks()=`),
        and an exception's type (`Type: ...`) only at the start of one of the message's lines."""
        if _TYPED.match(self.expects):
            return any(line.startswith(self.expects) for line in message.splitlines())
        return _whole(self.expects).search(message) is not None


def _whole(text: str) -> re.Pattern[str]:
    before = r"(?<![\w.])" if re.match(r"[\w.]", text) else ""
    after = r"(?!\w)" if re.search(r"\w$", text) else ""
    return re.compile(before + re.escape(text) + after)


def names_observable(text: str) -> bool:
    """Whether TEXT names what differs: the observable of the one message format (`what=`, with what
    named: `stats()['free']=`, `response='ok 1'`), or an exception's type and the start of its message
    (`DriverError: request 3`)."""
    return re.search(r"\S=", text) is not None or _TYPED.match(text) is not None


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
        if not names_observable(expects):
            raise BadEntry(f"{where}: {expects!r} names no observable: {OBSERVABLE}")
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


def too_wide(entries: dict[str, Entry], collected: Iterable[str]) -> list[str]:
    """Why each entry that names several collected tests (a parametrised test without its parameters) is refused."""
    ids = set(collected)
    problems = []
    for entry in entries.values():
        if entry.node in ids:
            continue
        named = [n for n in ids if n.startswith((entry.node + "::", entry.node + "["))]
        if named:
            problems.append(f"{entry.where}: {entry.node} names {len(named)} tests (e.g. {min(named)}); {ONE_EACH}")
    return problems


def failure_message(error: BaseException) -> str:
    """What an entry's TEXT is looked for in: `Type: message`, and each of an exception group's members
    (Hypothesis reports several distinct failures as one group) on a line of its own."""
    lines = [f"{type(error).__name__}: {error}"]
    for member in getattr(error, "exceptions", None) or ():
        if isinstance(member, BaseException):
            lines.append(failure_message(member))
    return "\n".join(lines)
