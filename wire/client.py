"""The suite's side of the wire: a driver process wrapped as an implementation module.

`ExecImpl("exec:CMD")` has what the suite asks of an implementation module, a
`PagedKVCache` class and an `OutOfBlocks` exception, but each call is a request line to
the driver CMD (started once, on first use, with a handshake). Errors come back as the
contract's exceptions by kind; anything out of protocol, a crash, or no answer within the
timeout is a DriverError that names the request, so a test fails with a readable reason
and the suite never hangs.

What a driver is given is float16: arrays of any real dtype are rounded here, as the
contract's rounding rule says, before they travel (CONTRACT.md "What a conforming port
is checked on").
"""

from __future__ import annotations

import collections
import os
import select
import shlex
import subprocess
import tempfile
import time
import weakref
from types import TracebackType
from typing import Any, Iterable, NoReturn, Sequence

import numpy as np
from numpy.typing import NDArray

from oracle.profile import Profile

from .ahead import Ahead
from .codec import VERSION, ProtocolError, call_fields, new_fields, parse_int, parse_list, parse_payload, parse_stats
from .diff import shorten
from .transcript import Mismatch, Transcript, handles_made, matches, renumbered, replay, written_for_another

# Seconds a driver has for each answer, unless the caller passes its own: the edge that builds the run's
# settings (paged_gate.config, PAGED_DRIVER_TIMEOUT) passes them down; wire itself reads no environment.
DEFAULT_TIMEOUT = 20.0


MISSING_CAPABILITY = "the implementation does not have the capability"  # how a skip for one starts (tests, vectors)


def missing_capability(missing: Iterable[str]) -> str:
    """The reason a test or a transcript is skipped: it needs capabilities the implementation does not announce."""
    return f"{MISSING_CAPABILITY} {', '.join(sorted(missing))}"


# What each driver command's first session announced at hello (its capabilities and profile words), for
# the sessions after it: the gate records its own first hello (`first_hello`) and hands it to the suite's
# processes (paged_gate.config, PAGED_ANNOUNCED). A later session that announces otherwise is a DriverError,
# so a driver cannot claim capabilities in its first session and skip their tests in the others.
FIRST_HELLO: dict[str, frozenset[str]] = {}


def first_hello(command: str, words: Iterable[str]) -> None:
    """Record what the first session of `command` (the driver's command, without `exec:`) announced; kept if one is known."""
    FIRST_HELLO.setdefault(command.strip(), frozenset(words))


class DriverError(Exception):
    """The driver crashed, hung, or answered out of protocol; not a contract error, so a test fails."""


class OutOfBlocks(RuntimeError):
    """A driver's `err out_of_blocks`."""


class RefusedAhead(AssertionError):
    """A call sent ahead with the oracle's answer (`RemoteKVCache.defer`) was answered otherwise: a test failure."""


ERRORS: dict[str, type[BaseException]] = {"unknown_sequence": KeyError, "invalid_argument": ValueError, "out_of_memory": MemoryError}
# and out_of_blocks: the implementation's OutOfBlocks (an ExecImpl's, for a driver)


class DriverProcess:
    """One running driver: requests written in order, their answers read in the same order, each within a timeout.

    Requests may run ahead of their answers (`send`, then `take` once per line): the answers
    read come in as a batch and wait in a queue, and the request each answer belongs to is
    known, so a failure names it. Every write goes through `write_all`, which reads answers
    while the driver's input is full: a driver blocked writing answers nobody reads would
    otherwise never read the rest (both would hang).
    """

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT, handshake: bool = True) -> None:
        """Start the driver and, if `handshake`, say `hello` (without it, the session is before its
        handshake: a transcript that does its own, and the driver's name, capabilities and profile are unknown)."""
        self.command = command
        self.timeout = timeout
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0
            )
        except OSError as exc:
            raise DriverError(f"cannot start driver {command!r}: {exc}") from None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd_in, self.fd_out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.fd_in, False)  # write_all writes what the pipe takes and reads answers meanwhile
        self.partial = b""  # bytes read after the last complete answer line
        self.answers: collections.deque[str | bytes] = collections.deque()  # answers read, not yet taken
        self.sent: collections.deque[str] = collections.deque()  # requests written, not yet answered by take()
        self.ahead = Ahead(self)  # requests written before their answers are read
        self.dead: str | None = None
        self.pending_closes: list[int] = []
        self.deferred: list[tuple[str, str]] = []  # (request, the answer it must match), written with the next ones (`defer`)
        self.name, self.capabilities, self.profile = "", frozenset[str](), ""
        if not handshake:
            return
        response = self.request(f"hello {VERSION}")
        fields = response.split(" ")
        if len(fields) < 3 or fields[0] != "ok" or fields[1] != str(VERSION):
            self.fail(f"hello {VERSION}", f"answered {shorten(response)!r}, expected 'ok {VERSION} NAME [CAPS...]'")
        self.name = fields[2]
        self.capabilities = frozenset(f for f in fields[3:] if "=" not in f)
        self.profile = ",".join(f for f in fields[3:] if "=" in f)  # the profile it declares (OPTION=VALUE words)
        first, words = FIRST_HELLO.get(command.strip()), frozenset(fields[3:])
        if first is not None and words != first:
            self.fail(f"hello {VERSION}", (
                f"announced={' '.join(sorted(words)) or 'nothing'}, but should be {' '.join(sorted(first)) or 'nothing'}: "
                "what this driver's first session announced (every session must announce the same capabilities and profile)"
            ))

    def request(self, line: str) -> str:
        """The driver's response to one request. A prefetched answer to the same line is taken if no
        other request came between (the driver answered it in the state this request would see); the
        other prefetched answers are read and dropped. Closes queued by the garbage collector go first."""
        if self.ahead:
            answer = self.ahead.claim(line)
            if answer is not None:
                return answer
            self.ahead.drop()
        lines = [f"close {self.pending_closes.pop()}" for _ in range(len(self.pending_closes))]
        lines.append(line)
        self.send(lines)
        for _ in range(len(lines) - 1):
            self.take()  # a close of a cache nobody holds: its answer decides nothing
        return self.take()

    def prefetch(self, lines: list[str]) -> None:
        """Send these queries now, in one write; the same requests made next take their answers (`request`)."""
        self.ahead.drop()
        self.ahead.write(lines)

    def defer(self, line: str, want: str) -> None:
        """Hold a request whose answer must match `want` (the oracle's, by the transcripts' rule: an `err KIND`
        matches by kind): it is written with the next requests, in the same write, and its answer is read and
        checked before theirs (`send`), so it costs no round trip of its own. Whatever was prefetched is
        dropped first: it answered the state before."""
        self.ahead.drop()
        self.deferred.append((line, want))

    def exchange(self, line: str) -> str:
        """One request written and its answer read (after any still owed), with nothing else sent."""
        self.ahead.drop()
        self.send([line])
        while len(self.sent) > 1:
            self.take()
        return self.take()

    def send(self, lines: list[str]) -> None:
        """Write the request lines (their answers are then `take`n, one each, in order), after the deferred
        ones, whose answers are taken here: RefusedAhead for the first that does not match the oracle's."""
        if self.dead:
            raise DriverError(f"driver {self.command!r} is no longer usable ({self.dead}); request {shorten(lines[0] if lines else '')!r} not sent")
        deferred, self.deferred = self.deferred, []
        lines = [line for line, _ in deferred] + lines
        if lines:
            self.sent.extend(lines)
            self.write_all(("\n".join(lines) + "\n").encode("ascii"), lines[0])
        wrong = None
        for line, want in deferred:
            answer = self.take()
            if wrong is None and not matches(want, answer):
                wrong = f"request {shorten(line)!r}, sent ahead of its answer, answered {shorten(answer)!r}, but should be {shorten(want)!r}"
        if wrong is not None:
            for _ in range(len(lines) - len(deferred)):
                self.take()  # the requests written with them go unanswered: the session stays in step
            raise RefusedAhead(f"driver {self.command!r}: {wrong} (the oracle's)")

    def write_all(self, data: bytes, line: str) -> None:
        """Write every byte; while the driver does not take them, read what it answers (into the queue)."""
        try:
            done = os.write(self.fd_in, data)
        except BlockingIOError:
            done = 0
        except OSError:
            self.fail(line, "could not be sent: the driver closed its input")
        if done == len(data):
            return
        rest = memoryview(data)[done:]
        while rest:
            readable, writable, _ = select.select([self.fd_out], [self.fd_in], [], self.timeout)
            if not readable and not writable:
                self.fail(line, f"accepted no input for {self.timeout:g} s (PAGED_DRIVER_TIMEOUT)")
            if readable:
                self.receive()
            if writable:
                try:
                    rest = rest[os.write(self.fd_in, rest[: 1 << 16]) :]
                except BlockingIOError:
                    pass
                except OSError:
                    self.fail(line, "could not be sent: the driver closed its input")

    def take(self) -> str:
        """The answer to the oldest request not yet answered, waiting for it at most the timeout."""
        if not self.answers:
            deadline = time.monotonic() + self.timeout
            while not self.answers:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.fd_out], [], [], left)[0]:
                    self.fail(self.sent[0], f"got no answer within {self.timeout:g} s (PAGED_DRIVER_TIMEOUT)")
                self.receive()
        line, answer = self.sent.popleft(), self.answers.popleft()
        if isinstance(answer, str):
            return answer
        try:  # in a batch that was not all ASCII
            return answer.decode("ascii").removesuffix("\r")
        except UnicodeDecodeError:
            self.fail(line, f"got a response that is not ASCII: {shorten(repr(answer))}")

    def receive(self) -> None:
        """Read what the driver has written (it is readable) and queue its complete lines, decoded in one go."""
        chunk = os.read(self.fd_out, 1 << 20)
        if not chunk:
            code = self.proc.wait(timeout=5)
            at = len(self.answers)
            self.fail(self.sent[at] if at < len(self.sent) else "(none)", f"got no answer: the driver exited with status {code}")
        data = self.partial + chunk
        end = data.rfind(b"\n")
        if end < 0:
            self.partial = data
            return
        self.partial = data[end + 1 :]
        try:
            text = data[:end].decode("ascii")
            self.answers.extend(text.split("\n") if "\r" not in text else (a.removesuffix("\r") for a in text.split("\n")))
        except UnicodeDecodeError:
            self.answers.extend(data[:end].split(b"\n"))  # take() names the request whose answer is not ASCII

    def fail(self, line: str, why: str) -> NoReturn:
        self.dead = why
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.seek(0)
        err = self.stderr.read().decode(errors="replace").strip().splitlines()[-12:]
        tail = ("\n  driver stderr (last lines):\n    " + "\n    ".join(err)) if err else ""
        raise DriverError(f"driver {self.command!r}: request {shorten(line)!r} {why}{tail}")

    def call(self, line: str, outcome: Any) -> list[str]:
        """The fields after `ok`; a contract error raised as its exception; anything else a DriverError."""
        response = self.request(line)
        head, _, rest = response.partition(" ")
        if head == "ok":
            return rest.split(" ") if rest else []
        if head == "err":
            kind, _, message = rest.partition(" ")
            error = outcome.OutOfBlocks if kind == "out_of_blocks" else ERRORS.get(kind)
            if error is not None:
                raise error(message)
            raise DriverError(f"driver {self.command!r}: request {shorten(line)!r} answered {shorten(response)!r}")
        self.fail(line, f"answered out of protocol: {shorten(response)!r}")

    def stop(self) -> None:
        self.deferred.clear()  # not sent: what a test defers, its next call checks
        # Prefetched answers nobody will take (a replay that stopped at its first difference): a quit
        # would wait for every one of them (130,000 for a range vector), so the driver is killed instead.
        if self.dead is None and self.proc.poll() is None and not self.ahead:
            try:
                if self.exchange("quit") == "ok":  # else it does not mean to go: no wait for it
                    self.proc.wait(timeout=5)
            except (DriverError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.dead = self.dead or "stopped"


class ExecImpl:
    """An implementation module whose PagedKVCache lives in a driver process ("exec:CMD")."""

    wire = True

    def __init__(self, spec: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        if not spec.startswith("exec:"):
            raise ValueError(f"not an exec: implementation: {spec!r}")
        self.command = spec[len("exec:") :].strip()
        self.timeout = timeout
        self.__name__ = spec
        self.__file__ = f"driver process: {self.command}"
        self._driver: DriverProcess | None = None
        self.OutOfBlocks = OutOfBlocks
        outcome = self

        class PagedKVCache(RemoteKVCache):
            impl = outcome

        self.PagedKVCache = PagedKVCache

    def driver(self) -> DriverProcess:
        """The running driver; a new one when none runs yet or the last one died."""
        if self._driver is None or self._driver.dead:
            self._driver = DriverProcess(self.command, self.timeout)
        return self._driver

    @property
    def capabilities(self) -> frozenset[str]:
        return self.driver().capabilities

    @property
    def PROFILE(self) -> str:  # noqa: N802 - the attribute a Python module declares its profile by
        """The profile the driver declares at hello."""
        return self.driver().profile

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.stop()


class RemoteKVCache:
    """One cache in the driver, by handle: every call is one request."""

    impl: ExecImpl

    def __init__(
        self, num_blocks: int, block_size: int, n_layers: int, n_kv_heads: int, d_head: int, *,
        prefix_caching: bool = False, sliding_window: int | None = None, layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        sizes = (num_blocks, block_size, n_layers, n_kv_heads, d_head)
        fields = new_fields(sizes, prefix_caching, sliding_window, layer_windows)
        self.n_kv_heads, self.d_head = int(fields[3]), int(fields[4])
        self._driver = self.impl.driver()
        (handle,) = self._driver.call("new " + " ".join(fields), self.impl)
        self._handle = parse_int(handle, "handle")
        self._handle_field = str(self._handle)
        self._finalizer = weakref.finalize(self, self._driver.pending_closes.append, self._handle)

    QUERIES = frozenset({"gather", "seq_len", "block_table", "stats", "num_free_blocks"})

    def _line(self, name: str, *args: Any) -> str:
        return " ".join([name, self._handle_field, *call_fields(name, *args)])

    def prefetch(self, calls: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
        """Send the requests of these queries (name, args) in one write, ahead of the calls: the same
        calls made next get their answers without a round trip each. Any other call first drops what is
        left, so every answer is still the one a call made then would get. For the harness's
        observations, many queries in a row."""
        lines = []
        for name, args in calls:
            if name not in self.QUERIES:
                raise ValueError(f"only queries are prefetched, not {name}")
            lines.append(self._line(name, *args))
        self._driver.prefetch(lines)

    DEFERRABLE = frozenset({"append", "extend", "fork", "free", "add_seq"})  # answers `ok`, or add_seq's `ok HITS`

    def kind_of(self, error: type[BaseException]) -> str | None:
        """The wire kind a driver answers for this contract error (None: TypeError, which has no wire form)."""
        if error is self.impl.OutOfBlocks:
            return "out_of_blocks"
        return next((kind for kind, e in ERRORS.items() if e is error), None)

    def defer(self, name: str, *args: Any, hits: int | None = None, error: type[BaseException] | None = None) -> None:
        """Make a call with no round trip of its own (`DriverProcess.defer`), given the oracle's outcome: the
        error it raised (any call), else success (a call of DEFERRABLE; `hits`, add_seq's answer). The request
        goes with the next call's, which raises RefusedAhead if the driver's answer is not the oracle's.
        TypeError for an argument with no wire form, before anything is sent, as the call itself."""
        line = self._line(name, *args)
        if error is not None:
            kind = self.kind_of(error)
            if kind is None:
                raise ValueError(f"{error.__name__} has no wire kind")
            want = f"err {kind}"
        elif name in self.DEFERRABLE:
            want = "ok" if hits is None else f"ok {hits}"
        else:
            raise ValueError(f"a call that succeeds is deferred only if it answers ok or add_seq's hits, not {name}")
        self._driver.defer(line, want)

    def _call(self, name: str, *args: Any) -> list[str]:
        """The response fields of the request for the call name(*args)."""
        line = self._line(name, *args)
        try:
            return self._driver.call(line, self.impl)
        except ProtocolError as exc:
            raise DriverError(f"driver answered {name} with a field that does not parse: {exc}") from None

    def add_seq(self, seq_id: int, tokens: Iterable[int] | None = None) -> int:
        (hits,) = self._call("add_seq", seq_id, tokens)
        return parse_int(hits)

    def extend(self, seq_id: int, tokens: Iterable[int]) -> None:
        self._call("extend", seq_id, tokens)

    def fork(self, parent: int, child: int) -> None:
        self._call("fork", parent, child)

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        self._call("append", seq_id, layer, k, v)

    def gather(self, seq_id: int, layer: int) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        length, k_hex, v_hex = self._call("gather", seq_id, layer)
        shape = (self.n_kv_heads, parse_int(length, "length"), self.d_head)
        return parse_payload(k_hex, shape), parse_payload(v_hex, shape)  # each decoded into memory of its own

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        (length,) = self._call("seq_len", seq_id, layer)
        return parse_int(length, "length")

    def block_table(self, seq_id: int, layer: int | None = None) -> NDArray[np.int32]:
        """The table of the layer's group; without a layer, `block_table C S` (a request any driver takes)."""
        (ids,) = self._call("block_table", seq_id) if layer is None else self._call("block_table", seq_id, layer)
        return np.array(parse_list(ids, "block id"), dtype=np.int32)

    def free(self, seq_id: int) -> None:
        self._call("free", seq_id)

    def stats(self) -> dict[str, int]:
        return parse_stats(self._call("stats"))

    def num_free_blocks(self) -> int:
        (free,) = self._call("num_free_blocks")
        return parse_int(free, "free")

    def close(self) -> None:
        self._call("close")

    def __enter__(self) -> "RemoteKVCache":
        self.stats()  # a closed cache answers invalid_argument: ValueError, as the contract's `with` on a closed cache
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Session:
    """A fresh protocol session with an implementation, after `hello`: a driver process, or a Python
    module served in-process by the Dispatcher a Python driver uses. For replaying transcripts."""

    def __init__(self, spec: str, timeout: float = DEFAULT_TIMEOUT, handshake: bool = True) -> None:
        """A session of `spec`, after `hello` if `handshake` (else before it: nothing announced)."""
        self.capabilities: frozenset[str]
        self.profile: str  # the profile it declares, OPTION=VALUE,...
        self.queued: collections.deque[str] = collections.deque()  # a transcript's requests not yet written (`send_ahead`)
        if spec.startswith("exec:"):
            self.process: DriverProcess | None = DriverProcess(spec[len("exec:") :].strip(), timeout, handshake)
            self.capabilities = self.process.capabilities
            self.profile = self.process.profile
            self.dispatcher = None
        else:
            import importlib

            from .server import Dispatcher

            self.process = None
            self.dispatcher = Dispatcher(importlib.import_module(spec), spec)
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
        self.send_ahead(transcript)
        return replay(transcript, self.send, exact_ids=profile.exact_ids), None

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()


def replay_fresh(
    transcript: Transcript, impl: str, profile: Profile, timeout: float = DEFAULT_TIMEOUT
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

    def __init__(self, impl: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.impl, self.timeout = impl, timeout
        self.session: Session | None = None
        self.made = 0  # caches the session has made: the next transcript's handles start here

    def replay(self, transcript: Transcript, profile: Profile) -> tuple[Mismatch | None, str | None]:
        """What `replay_fresh` answers for this transcript; DriverError as it raises one."""
        shifted = renumbered(transcript, self.made) if self.impl.startswith("exec:") else None
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
