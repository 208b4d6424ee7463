"""A driver process on a pipe: requests written in order, answers read in order, each within a timeout.

`DriverProcess` runs one driver (`exec:CMD`); requests may go ahead of their answers (`Ahead`, the one
way of sending ahead: a test's prefetched queries, a transcript's requests, the explorer's batches),
each saving a round trip. A crash, a hang or an answer out of protocol is a DriverError naming the
request, so the suite never hangs. The remote cache (`wire.remote`) and replay (`wire.replay`) build on it.
"""

from __future__ import annotations

import collections
import os
import select
import shlex
import subprocess
import tempfile
import time
from typing import Any, Iterable, NoReturn

from .codec import VERSION
from .diff import shorten
from .transcript import matches

# Seconds a driver has for each answer, unless the caller passes its own: the edge that builds the run's
# settings (testkit.config, PAGED_DRIVER_TIMEOUT) passes them down; wire itself reads no environment.
DEFAULT_TIMEOUT = 20.0



# What each driver command's first session announced at hello (its capabilities and profile words), for
# the sessions after it: the gate records its own first hello (`first_hello`) and hands it to the suite's
# processes (testkit.config, PAGED_ANNOUNCED). A later session that announces otherwise is a DriverError,
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

    def write_ahead(self, lines: list[str]) -> Batch:
        """Write these requests after those already ahead of their answers (`Ahead.write`); their answers: `answers_to`."""
        return self.ahead.write(lines)

    def answers_to(self, batch: Batch) -> list[str]:
        """A batch's answers (`write_ahead`), in order, once read (and those of the batches before it)."""
        return self.ahead.answers(batch)

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


class Batch:
    """Requests written together ahead of their answers (`Ahead.write`), and their answers as far as read."""

    __slots__ = ("lines", "answers")

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.answers = lines, list[str]()


class Ahead:
    """Requests written to a driver before their answers are read: the one way of sending ahead (a
    test's prefetched queries, a transcript's requests, the explorer's batches).

    Requests go in batches (`write`); the answers come back in order, so reading a batch's (`answers`)
    reads those of the batches before it first, each kept on its batch for its owner. A request made
    as a call takes the answer written ahead for it (`claim`): no round trip; `drop` reads the rest.
    """

    def __init__(self, process: DriverProcess) -> None:
        self.process, self.batches, self.unread = process, collections.deque[Batch](), 0

    def __len__(self) -> int:
        return self.unread  # requests written ahead whose answers are not read yet

    def write(self, lines: list[str]) -> Batch:
        """Send these requests (`DriverProcess.send`) after those already ahead of their answers."""
        self.process.send(lines)
        batch = Batch(lines)
        if lines:
            self.batches.append(batch)
            self.unread += len(lines)
        return batch

    def next_line(self) -> str | None:
        """The request whose answer comes next, or None."""
        return self.batches[0].lines[len(self.batches[0].answers)] if self.batches else None

    def read(self, count: int) -> None:
        """Read the next `count` answers into their batches."""
        while count > 0:
            head = self.batches[0]
            n = min(count, len(head.lines) - len(head.answers))
            head.answers += [self.process.take() for _ in range(n)]
            count, self.unread = count - n, self.unread - n
            if len(head.answers) == len(head.lines):
                self.batches.popleft()

    def answers(self, batch: Batch) -> list[str]:
        """A batch's answers, in order, once read (and those of the batches before it)."""
        while len(batch.answers) < len(batch.lines):
            self.read(len(self.batches[0].lines) - len(self.batches[0].answers))
        return batch.answers

    def claim(self, line: str) -> str | None:
        """The answer written ahead for `line` if it is among those not read yet, else None. The answers
        before it are dropped: queries skipped, nothing changed since, so the later answer stands."""
        skipped = 0
        for batch in self.batches:
            try:
                at = batch.lines.index(line, len(batch.answers))
            except ValueError:
                skipped += len(batch.lines) - len(batch.answers)
                continue
            self.read(skipped + at - len(batch.answers) + 1)
            return batch.answers[-1]
        return None

    def drop(self) -> None:
        """Read and forget every answer written ahead: a request that is not among them comes next."""
        self.read(self.unread)
