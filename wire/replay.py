"""Transcript replay: a fresh protocol session (`Session`) and a replayer that spares a driver start-up per vector.

A transcript (`wire.transcript`) is replayed on a driver process (`wire.process`) or on a Python module
served in-process; what needs a capability the implementation does not announce is skipped with
`missing_capability`'s reason. `Replayer` keeps one session for many transcripts, renumbered.
"""

from __future__ import annotations

import collections
from typing import Iterable

from oracle.profile import Profile

from .codec import VERSION
from .process import DEFAULT_TIMEOUT, DriverError, DriverProcess
from .target import Impl, parse
from .transcript import Mismatch, Transcript, handles_made, renumbered, replay, written_for_another


MISSING_CAPABILITY = "the implementation does not have the capability"  # how a skip for one starts (tests, vectors)


def missing_capability(missing: Iterable[str]) -> str:
    """The reason a test or a transcript is skipped: it needs capabilities the implementation does not announce."""
    return f"{MISSING_CAPABILITY} {', '.join(sorted(missing))}"

class Session:
    """A fresh protocol session with an implementation, after `hello`: a driver process, or a Python
    module served in-process by the Dispatcher a Python driver uses. For replaying transcripts."""

    def __init__(self, spec: str | Impl, timeout: float = DEFAULT_TIMEOUT, handshake: bool = True) -> None:
        """A session of `spec` (`wire.target.parse`), after `hello` if `handshake` (else before it: nothing announced)."""
        impl = parse(spec)
        self.capabilities: frozenset[str]
        self.profile: str  # the profile it declares, OPTION=VALUE,...
        self.queued: collections.deque[str] = collections.deque()  # a transcript's requests not yet written (`send_ahead`)
        if impl.command is not None:
            self.process: DriverProcess | None = DriverProcess(impl.command, timeout, handshake)
            self.capabilities = self.process.capabilities
            self.profile = self.process.profile
            self.dispatcher = None
        else:
            import importlib

            from .server import Dispatcher

            self.process = None
            self.dispatcher = Dispatcher(importlib.import_module(impl.text), impl.text)
            self.capabilities, self.profile = frozenset(), ""
            if handshake:
                self.dispatcher.handle(f"hello {VERSION}")
                self.capabilities = frozenset(self.dispatcher.caps)
                self.profile = ",".join(self.dispatcher.profile)

    WINDOW = 4096  # requests of a transcript written ahead of their answers, at most

    def send(self, line: str) -> str:
        if self.process is not None:
            if self.queued:
                following = self.process.ahead.next_line() or self.queued[0]
                if line == following:
                    self.top_up()
                else:  # the transcript was left: its requests not yet written never will be
                    self.queued.clear()
            return self.process.request(line)
        assert self.dispatcher is not None
        return self.dispatcher.handle(line)[0]

    def send_ahead(self, transcript: Transcript) -> None:
        """Write a driver the transcript's requests (up to a `quit`) before their answers are read, WINDOW
        at a time: each `send` of them then takes its answer, with no round trip each (no answer of a
        transcript decides its next request), and a replay that stops at its first difference leaves
        the driver at most a window to answer. For an in-process module, nothing to do."""
        if self.process is not None:
            requests = [request for request, _ in transcript.steps]
            if "quit" in requests:
                requests = requests[: requests.index("quit") + 1]
            self.process.ahead.drop()
            self.queued = collections.deque(requests)
            self.top_up()

    def top_up(self) -> None:
        """Write the next requests of the transcript once fewer than half a window wait for their answers."""
        assert self.process is not None
        if self.queued and len(self.process.ahead) < self.WINDOW // 2:
            count = min(self.WINDOW - len(self.process.ahead), len(self.queued))
            self.process.ahead.write([self.queued.popleft() for _ in range(count)])

    def replay(self, transcript: Transcript, profile: Profile) -> tuple[Mismatch | None, str | None]:
        """Replay a transcript in this session as it is (its handles are this session's): (its first
        mismatch or None, why it was not replayed: a capability this session does not announce, or
        profile values it was not written for)."""
        missing = set(transcript.requires) - self.capabilities
        if missing:
            return None, missing_capability(missing)
        other = written_for_another(transcript, profile)
        if other:
            return None, other
        if profile.exact_ids or not any(request.startswith("kv_pages ") for request, _ in transcript.steps):
            self.send_ahead(transcript)  # (renamed, a kv_pages is asked for at the port's pages: sent as it comes)
        return replay(transcript, self.send, exact_ids=profile.exact_ids), None

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()


def replay_fresh(
    transcript: Transcript, impl: str | Impl, profile: Profile, timeout: float = DEFAULT_TIMEOUT
) -> tuple[Mismatch | None, str | None]:
    """Replay a transcript in a fresh session of `impl` (docs/PROTOCOL.md, "Transcripts"), after the
    replayer's own `hello` unless the transcript does its own: `Session.replay`'s answer. DriverError when
    the driver cannot start or fails on the way."""
    session = Session(impl, timeout, handshake=not transcript.own_handshake)
    try:
        return session.replay(transcript, profile)
    finally:
        session.close()


class Replayer:
    """Transcripts replayed one after another in one driver session (docs/PROTOCOL.md, "Transcripts"),
    sparing a driver start-up each.

    Each transcript is renumbered past the caches the ones before it made (`transcript.renumbered`),
    and its caches are closed after it. One that cannot be renumbered, and one that does not match so
    (or whose driver fails on the way), is replayed in a fresh session, and that verdict counts: the
    shared session never fails a transcript that a fresh one passes. An in-process module gets a
    fresh session each time, which costs it nothing.
    """

    def __init__(self, impl: str | Impl, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.impl, self.timeout = parse(impl), timeout
        self.session: Session | None = None
        self.made = 0  # caches the session has made: the next transcript's handles start here

    def replay(self, transcript: Transcript, profile: Profile) -> tuple[Mismatch | None, str | None]:
        """What `replay_fresh` answers for this transcript; DriverError as it raises one."""
        shifted = renumbered(transcript, self.made) if self.impl.driver else None
        if shifted is None:
            return replay_fresh(transcript, self.impl, profile, self.timeout)
        if self.session is None:
            self.session = Session(self.impl, self.timeout)
        try:
            mismatch, skipped = self.session.replay(shifted, profile)
            if mismatch is None and skipped is None:
                made = handles_made(transcript)
                for handle in range(self.made, self.made + made):
                    self.session.send(f"close {handle}")  # its memory back; the answer decides nothing
                self.made += made
            matched = mismatch is None
        except DriverError:
            matched = False
        if not matched:
            self.stop()  # in a state nobody can vouch for
            return replay_fresh(transcript, self.impl, profile, self.timeout)
        return None, skipped

    def stop(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session, self.made = None, 0
