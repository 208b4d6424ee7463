"""Transcripts: requests with their expected responses (docs/PROTOCOL.md "Transcripts").

The conformance vectors and the gate's failure files are transcripts (written by
`record.Recorder`, with the oracle's answers); `replay` sends a transcript to any
implementation and stops at the first response that does not match, saying what differs.

After a request during which some of the oracle's blocks went back to the pool, a
`# released C IDS` line says which (cache handle C). A replay with `exact_ids=False`
(profile allocation=any) compares block tables up to a renaming of ids bound for each
block's lifetime (`oracle.id_renaming`), and those lines end the lifetimes. Under every
profile a table's ids must be blocks of the cache's pool, 0 .. N-1 (N from its `new`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from oracle.profile import OPTIONS, Profile, hint
from oracle.id_renaming import BlockNames, outside_pool
from oracle.model import RELEASED

from .codec import EMPTY, ProtocolError, parse_int, parse_list, parse_payload
from .diff import array_difference, list_difference, shorten
from .server import Dispatcher

META_KEYS = ("id", "comment", "flags", "requires", "profile", "handshake")
OWN_HANDSHAKE = "in-transcript"  # `# handshake: in-transcript`: the replayer sends no hello of its own


@dataclass
class Transcript:
    meta: dict[str, str] = field(default_factory=dict)
    steps: list[tuple[str, str]] = field(default_factory=list)  # (request, expected response)
    notes: list[str] = field(default_factory=list)  # comment lines after the metadata
    # step index (0-based) -> (handle, oracle block ids) released during that request
    released: dict[int, list[tuple[str, list[int]]]] = field(default_factory=dict)

    @property
    def requires(self) -> list[str]:
        return self.meta.get("requires", "").split()

    @property
    def own_handshake(self) -> bool:
        """Whether the transcript starts before the handshake (its own requests say `hello`, or do not)."""
        return self.meta.get("handshake") == OWN_HANDSHAKE

    def text(self) -> str:
        lines = [f"# {key}: {self.meta[key]}" for key in META_KEYS if self.meta.get(key)]
        lines += [f"# {key}: {value}" for key, value in self.meta.items() if key not in META_KEYS]
        lines += [f"# {note}" for note in self.notes]
        for i, (request, response) in enumerate(self.steps):
            lines += [f"> {request}", f"< {response}"]
            lines += [f"# released {handle} {','.join(map(str, ids))}" for handle, ids in self.released.get(i, ())]
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
            released = line[1:].split()
            if in_header and sep and key.isidentifier():
                out.meta[key] = value
            elif not in_header and len(released) == 3 and released[0] == "released" and out.steps and pending is None:
                out.released.setdefault(len(out.steps) - 1, []).append((released[1], parse_list(released[2])))
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


def read_header(path: Path) -> Transcript:
    """The transcript's metadata and no step: its lines up to the first request, for a look at many files."""
    lines = []
    with path.open(encoding="ascii") as text:
        for line in text:
            if line.strip() and not line.startswith("#"):
                break
            lines.append(line)
    return parse("".join(lines))


def matches(want: str, got: str, request: str = "") -> bool:
    """The protocol's rule: equal, except that an expected `err KIND ...` matches any `err KIND` message,
    and an expected `ok VERSION` to a `hello` any answer that starts so (the rest is the driver's name,
    capabilities and profile)."""
    if want.startswith("err ") or (want.startswith("ok ") and request.startswith("hello ")):
        return got.split(" ")[:2] == want.split(" ")[:2]
    return got == want


def gather_difference(got: list[str], want: list[str], heads: int, dims: int) -> str | None:
    """What differs between two gather answers' fields (length, K payload, V payload): the length, else the
    first K or V value; None when they agree. Raises ProtocolError for a payload that does not parse."""
    if got[0] != want[0]:
        return f"length={got[0]}, but should be {want[0]}"
    shape = (heads, parse_int(want[0]), dims)
    for name, gi, wi in (("k", got[1], want[1]), ("v", got[2], want[2])):
        diff = array_difference(parse_payload(gi, shape), parse_payload(wi, shape))
        if diff:
            return f"{name}{diff}"
    return None


def explain(request: str, want: str, got: str, geometry: dict[str, tuple[int, int]]) -> str:
    """What differs between two responses to `request`, as precisely as the request's kind allows."""
    verb, *args = request.split(" ")
    if not (want.startswith("ok") and got.startswith("ok")):
        return f"response={shorten(got)!r}, but should be {shorten(want)!r}"
    w, g = want.split(" ")[1:], got.split(" ")[1:]
    try:
        differs = list_difference(parse_list(g[0]), parse_list(w[0])) if verb == "block_table" and len(w) == len(g) == 1 else None
        if differs:
            return named("block_table", differs)
        if verb == "gather" and len(w) == len(g) == 3 and args[0] in geometry:
            diff = gather_difference(g, w, *geometry[args[0]])
            if diff:
                return diff
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


OTHER_PROFILE = "written for"  # how written_for_another's reason starts: a file for other profile values


def written_for_another(transcript: Transcript, profile: Profile) -> str | None:
    """Why a transcript is not for a port of `profile` (its `profile` line names other values), or None."""
    line = transcript.meta.get("profile", "")
    if not line:
        return None
    theirs = dict(item.partition("=")[::2] for item in line.split(","))
    unknown = [o for o in theirs if o not in OPTIONS]
    if unknown:
        return f"its profile line names options this suite does not know: {', '.join(unknown)}"
    mine = {o: getattr(profile, o) for o in theirs}
    if mine == theirs:
        return None
    return f"{OTHER_PROFILE} {line}; the port has {','.join(f'{o}={v}' for o, v in mine.items())} (another file of this vector is written for that)"


def table_difference(want: str, got: str, num_blocks: int, names: BlockNames | None) -> str | None:
    """None when a block_table answer (expected `ok IDS`) matches; else what differs. Every id must be a block
    of the pool of `num_blocks` (under every profile); then the table is the expected one up to the renaming
    `names` (allocation=any), or id for id when `names` is None."""
    w, g = want.split(" "), got.split(" ")
    if len(w) != 2 or len(g) != 2 or g[0] != "ok":
        return None if matches(want, got) else f"response={shorten(got)!r}, but should be {shorten(want)!r}"
    try:
        ids, expected = parse_list(g[1]), parse_list(w[1])
    except ProtocolError as exc:
        return f"response does not parse ({exc}): {shorten(got)!r}"
    outside = outside_pool("block_table", ids, num_blocks)
    if outside is not None:
        return outside
    if names is not None:
        return names.check("block_table", ids, expected)
    if g[1] == w[1]:
        return None
    differs = list_difference(ids, expected)
    return f"{named('block_table', differs)} ({hint(Profile())})" if differs else f"response={shorten(got)!r}, but should be {shorten(want)!r}"


def pages_difference(request: str, want: str, got: str, block_size: int, names: BlockNames) -> str | None:
    """None when a page_table or slot_mapping answer matches under allocation=any; else what differs. Block ids
    are names there: each page (`b * (B / P) + j`) or slot (`b * B + offset`) must be the oracle's with its block
    b up to the renaming `names` and its place j or offset in the block exact; indptr, last_page_len and -1 (a
    released slot) exact. Any other answer by the protocol's rule."""
    verb, *fields = request.split(" ")
    w, g = want.split(" "), got.split(" ")
    if w[0] != "ok" or g[0] != "ok" or len(w) != len(g):
        return None if matches(want, got) else f"response={shorten(got)!r}, but should be {shorten(want)!r}"
    try:
        if verb == "page_table":
            for i, name in ((1, "indptr"), (3, "last_page_len")):
                if g[i] != w[i]:
                    return f"{name}={shorten(g[i])}, but should be {shorten(w[i])} [{shorten(request)}]"
            per_block, what, ids, expected = block_size // parse_int(fields[2]), "page_table indices", g[2], w[2]
        else:
            per_block, what, ids, expected = block_size, "slot_mapping", g[1], w[1]
        got_ids, want_ids = parse_list(ids), parse_list(expected)
    except (ProtocolError, ZeroDivisionError) as exc:
        return f"response does not parse ({exc}): {shorten(got)!r}"
    if len(got_ids) != len(want_ids):
        return f"{what} length={len(got_ids)}, but should be {len(want_ids)} [{shorten(request)}]"
    for i, (port, oracle) in enumerate(zip(got_ids, want_ids)):
        if RELEASED not in (port, oracle) and port % per_block != oracle % per_block:
            return f"{what}[{i}] % {per_block}={port % per_block}, but should be {oracle % per_block} (its place in its block) [{shorten(request)}]"
    blocks = [[x if x == RELEASED else x // per_block for x in xs] for xs in (got_ids, want_ids)]
    return names.check(f"{what}' blocks", *blocks)


def renamed_pages(request: str, block_size: int, names: BlockNames, send: Callable[[str], str]) -> str:
    """The answer to `kv_pages C LAYER P FIRST COUNT` under allocation=any, where the transcript's pages are the
    oracle's: each page asked for at the port's page of the block its oracle block is bound to (one request a
    page), the answers joined as one. An `err unbound ...` answer when a page's block is bound to none yet (the
    transcript reads a page before any answer named its block)."""
    _, handle, layer, size, first, count = request.split(" ")
    per_block = block_size // int(size)
    ks, vs = [], []
    for page in range(int(first), int(first) + int(count)):
        port = names._port_of.get(page // per_block)  # noqa: SLF001 - the renaming's one lookup from the oracle's side
        if port is None:
            return f"err unbound page {page} is of oracle block {page // per_block}, which no answer before named"
        answer = send(f"kv_pages {handle} {layer} {size} {port * per_block + page % per_block} 1").split(" ")
        if answer[0] != "ok" or len(answer) != 3:
            return " ".join(answer)
        ks.append(answer[1])
        vs.append(answer[2])
    return f"ok {''.join(ks) or EMPTY} {''.join(vs) or EMPTY}"


PAGE_VERBS_RENAMED = frozenset({"page_table", "slot_mapping"})  # answers that name blocks, besides block_table


def named(what: str, differs: str) -> str:
    """`what` before a difference: `block_table[1]=5, ...`, or `block_table length=2, ...`."""
    return f"{what}{differs}" if differs.startswith("[") else f"{what} {differs}"


HANDLE_VERBS = frozenset(Dispatcher.VERBS)  # the requests whose first field is a cache handle: the server's one table of them
SMALL_HANDLE = 6  # digits: a handle field renumbered is a plain decimal of at most this many


def handles_made(transcript: Transcript) -> int:
    """The caches the transcript makes: its `new` requests whose expected answer is `ok C`."""
    return sum(1 for request, want in transcript.steps if request.startswith("new ") and want.startswith("ok "))


def renumbered(transcript: Transcript, base: int) -> Transcript | None:
    """The transcript as a session that made `base` caches before it sees it: every handle C is C + base
    (in requests, in `new`'s answers and in `# released` lines), so that a transcript replays after
    others in one session (PROTOCOL.md, "Transcripts"). None when that is not the same test as a fresh
    session: one that does its own handshake, a `hello` or `quit`, a verb it does not know, or a handle
    field that is not a plain decimal of a few digits (as a malformed request's may be)."""
    if transcript.own_handshake:
        return None
    steps = []
    for request, want in transcript.steps:
        fields = request.split(" ")
        if fields[0] == "new":
            if want.startswith("ok "):
                handle = want[3:]
                if not plain_decimal(handle):
                    return None
                want = f"ok {int(handle) + base}"
        elif fields[0] not in HANDLE_VERBS:
            return None
        elif len(fields) > 1:
            if not plain_decimal(fields[1]):
                return None
            fields[1] = str(int(fields[1]) + base)
            request = " ".join(fields)
        steps.append((request, want))
    released = {}
    for step, entries in transcript.released.items():
        if not all(plain_decimal(handle) for handle, _ in entries):
            return None
        released[step] = [(str(int(handle) + base), ids) for handle, ids in entries]
    return Transcript(dict(transcript.meta), steps, list(transcript.notes), released)


def plain_decimal(text: str) -> bool:
    """0, or digits that do not start with 0, at most SMALL_HANDLE of them."""
    return text.isascii() and text.isdigit() and len(text) <= SMALL_HANDLE and (text == "0" or text[0] != "0")


def replay(transcript: Transcript, send: Callable[[str], str], exact_ids: bool = True) -> Mismatch | None:
    """Send every request of a fresh session (after `hello`) and stop at the first response that does not match.

    With `exact_ids` false (allocation=any), block tables match up to a renaming of block ids.
    """
    geometry: dict[str, tuple[int, int]] = {}  # handle -> (H, D), to explain gathers
    pools: dict[str, int] = {}  # handle -> N, the pool its block ids are in
    sizes: dict[str, int] = {}  # handle -> B, to read pages and slots as (block, place in it)
    names: dict[str, BlockNames] = {}  # handle -> the renaming of its block ids (allocation=any)
    for step, (request, want) in enumerate(transcript.steps, 1):
        fields = request.split(" ")
        renaming = names.get(fields[1]) if len(fields) > 1 else None
        if fields[0] == "kv_pages" and renaming is not None and want.startswith("ok ") and len(fields) == 6:
            got = renamed_pages(request, sizes[fields[1]], renaming, send)
        else:
            got = send(request)
        if fields[0] == "new" and want.startswith("ok "):
            numbers = fields[1:6]
            handle = want.split(" ")[1]
            geometry[handle], pools[handle] = (int(numbers[3]), int(numbers[4])), int(numbers[0])
            sizes[handle] = int(numbers[1])
            if not exact_ids:
                names[handle] = BlockNames(pools[handle])
        if fields[0] == "block_table" and want.startswith("ok") and len(fields) > 1 and fields[1] in pools:
            why = table_difference(want, got, pools[fields[1]], names.get(fields[1]))
            if why is not None:
                return Mismatch(step, request, want, got, why)
        elif fields[0] in PAGE_VERBS_RENAMED and renaming is not None:
            why = pages_difference(request, want, got, sizes[fields[1]], renaming)
            if why is not None:
                return Mismatch(step, request, want, got, why)
        elif not matches(want, got, request):
            return Mismatch(step, request, want, got, explain(request, want, got, geometry))
        for handle, ids in transcript.released.get(step - 1, ()):
            for block in ids:
                if handle in names:
                    names[handle].release(block)
    return None
