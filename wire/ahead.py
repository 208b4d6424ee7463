"""Requests written to a driver before their answers are read, as one mechanism (`Ahead`).

A driver answers requests in order, so requests may be written long before their answers are read:
a test's prefetched queries (`RemoteKVCache.prefetch`), a transcript's requests (`Session.send_ahead`)
and the exhaustive explorer's batches (`explorer.driver_port`) all go this way, each saving a round
trip per request.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import DriverProcess


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
