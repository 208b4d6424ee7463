"""Transcripts: requests with their expected responses (docs/PROTOCOL.md "Transcripts").

The conformance vectors and the gate's failure files are transcripts (written by
`record.Recorder`, with the oracle's answers); `replay` sends a transcript to any
implementation and stops at the first response that does not match, saying what differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .codec import ProtocolError, parse_int, parse_list, parse_payload
from .diff import array_difference, list_difference, shorten

META_KEYS = ("id", "comment", "flags", "requires")


@dataclass
class Transcript:
    meta: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[str, str]] = field(default_factory=list)  # (request, expected response)
    notes: list[str] = field(default_factory=list)  # comment lines after the metadata

    @property
    def requires(self) -> list[str]:
        return self.meta.get("requires", "").split()

    def text(self) -> str:
        lines = [f"# {key}: {self.meta[key]}" for key in META_KEYS if self.meta.get(key)]
        lines += [f"# {key}: {value}" for key, value in self.meta.items() if key not in META_KEYS]
        lines += [f"# {note}" for note in self.notes]
        for request, response in self.steps:
            lines += [f"> {request}", f"< {response}"]
        return "\n".join(lines) + "\n"


def parse(text: str) -> Transcript:
    out = Transcript()
    pending: str | None = None
    in_header = True
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].strip().partition(": ")
            if in_header and sep and key.isidentifier():
                out.meta[key] = value
            else:
                out.notes.append(line[1:].strip())
            continue
        in_header = False
        if line.startswith("> "):
            if pending is not None:
                raise ProtocolError(f"line {number}: request without a response before it")
            pending = line[2:]
        elif line.startswith("< "):
            if pending is None:
                raise ProtocolError(f"line {number}: response without a request")
            out.steps.append((pending, line[2:]))
            pending = None
        else:
            raise ProtocolError(f"line {number}: neither '# ', '> ' nor '< ': {line[:60]!r}")
    if pending is not None:
        raise ProtocolError("the last request has no response")
    return out


def read(path: Path) -> Transcript:
    return parse(path.read_text(encoding="ascii"))


def matches(want: str, got: str) -> bool:
    """The protocol's rule: equal, except that an expected `err KIND ...` matches any `err KIND` message."""
    if want.startswith("err "):
        return got.split(" ")[:2] == want.split(" ")[:2]
    return got == want


def explain(request: str, want: str, got: str, geometry: dict[str, tuple[int, int]]) -> str:
    """What differs between two responses to `request`, as precisely as the request's kind allows."""
    verb, *args = request.split(" ")
    if not (want.startswith("ok") and got.startswith("ok")):
        return f"response={shorten(got)!r}, but should be {shorten(want)!r}"
    w, g = want.split(" ")[1:], got.split(" ")[1:]
    try:
        if verb == "block_table" and len(w) == len(g) == 1:
            return f"block_table{list_difference(parse_list(g[0]), parse_list(w[0]))}"
        if verb == "gather" and len(w) == len(g) == 3 and args[0] in geometry:
            heads, dims = geometry[args[0]]
            if g[0] != w[0]:
                return f"length={g[0]}, but should be {w[0]}"
            shape = (heads, parse_int(w[0]), dims)
            for name, gi, wi in (("k", g[1], w[1]), ("v", g[2], w[2])):
                diff = array_difference(parse_payload(gi, shape), parse_payload(wi, shape))
                if diff:
                    return f"{name}{diff}"
    except ProtocolError as exc:
        return f"response does not parse ({exc}): {shorten(got)!r}"
    return f"response={shorten(got)!r}, but should be {shorten(want)!r}"


@dataclass
class Mismatch:
    step: int  # 1-based index of the request
    request: str
    want: str
    got: str
    why: str

    def __str__(self) -> str:
        return f"request {self.step} ({shorten(self.request, 120)}): {self.why}"


def replay(transcript: Transcript, send: Callable[[str], str]) -> Mismatch | None:
    """Send every request of a fresh session (after `hello`) and stop at the first response that does not match."""
    geometry: dict[str, tuple[int, int]] = {}  # handle -> (H, D), to explain gathers
    for step, (request, want) in enumerate(transcript.steps, 1):
        got = send(request)
        if request.startswith("new ") and want.startswith("ok "):
            sizes = request.split(" ")[1:6]
            geometry[want.split(" ")[1]] = (int(sizes[3]), int(sizes[4]))
        if not matches(want, got):
            return Mismatch(step, request, want, got, explain(request, want, got, geometry))
    return None
