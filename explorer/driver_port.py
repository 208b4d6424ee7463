"""A driver (`exec:CMD`) as the walk's port (`observation.Port`): one process, a cache per frontier state,
by handle. An observation's values are the driver's answers as text, in `reads` order."""

from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np

from oracle.model import ModelKVCache
from oracle.state import gather_bits, positions
from wire.process import Batch
from wire.codec import call_fields, format_stats, new_fields, parse_list
from wire.target import Impl, parse

from .alphabet import GEOMETRIES, Geometry
from .observation import CLOSED, Answer, Call, Item, Observation, Outcome, Read, Refusals, group_reads, reads

Ticket = tuple[Batch, int]  # requests written ahead (`DriverPort.send`), and how many closes lead them


class DriverPort:
    """A driver (`exec:CMD`): one process, a cache per frontier state, by handle; a copy is a new handle
    with the state's calls replayed into it (always faithful). The requests of a batch are pipelined
    (written together, answered in order), and answers are compared as text."""

    def __init__(self, spec: str | Impl, timeout: float = 30.0) -> None:
        from wire.process import DriverProcess

        impl = parse(spec)
        if impl.command is None:
            raise ValueError(f"not an exec: implementation: {impl.text!r}")
        self.spec = impl.text
        self.process = DriverProcess(impl.command, timeout)
        self.name = impl.text
        self.capabilities = self.process.capabilities
        # Shared by every bound view of this port: the handle the next `new` answers (PROTOCOL.md: 0, 1,
        # 2, ...), and the closes of discarded caches, sent with the next batch.
        self.shared: dict[str, Any] = {"handles": 0, "closing": list[str]()}
        self.fields: dict[Any, tuple[tuple[Any, ...], str]] = {}
        self.g: Geometry = GEOMETRIES[0]  # set by bound()
        self.note = ""  # nothing to say of copies: each is a replay

    def bound(self, g: Geometry) -> "DriverPort":
        """This port, for caches of geometry g (a walk's own); the process and the handles are shared."""
        view = copy.copy(self)
        view.g = g
        return view

    def exchange(self, lines: list[str]) -> list[str]:
        """The answers to the lines, in order (pipelined)."""
        return self.collect(self.send(lines))

    def send(self, lines: list[str]) -> Ticket:
        """Write the lines (with the closes queued before them) ahead of their answers (`wire.process.Ahead`):
        the driver answers while the explorer goes on. The ticket: the batch, and how many closes lead it."""
        closing: list[str] = self.shared["closing"]
        if self.process.dead:
            raise RuntimeError(f"driver {self.spec!r} is no longer usable ({self.process.dead})")
        ticket = self.process.write_ahead(closing + lines), len(closing)
        closing.clear()
        return ticket

    def collect(self, ticket: Ticket) -> list[str]:
        """The answers to a ticket's lines, in order (the closes' left out)."""
        batch, closes = ticket
        return self.process.answers_to(batch)[closes:]

    def new_line(self, g: Geometry) -> tuple[str, int]:
        handle: int = self.shared["handles"]
        self.shared["handles"] = handle + 1
        return "new " + " ".join(new_fields(g.sizes, **g.options)), handle

    def new(self, g: Geometry) -> int:
        line, handle = self.new_line(g)
        (answer,) = self.exchange([line])
        if answer != f"ok {handle}":
            raise RuntimeError(f"{line!r} answered {answer!r}, expected 'ok {handle}'")
        return handle

    def line(self, handle: int, method: str, args: tuple[Any, ...]) -> str:
        """The request line; its fields are made once per call (an append's arrays are shared, and kept
        here with the fields, so that their ids stay theirs)."""
        key = (method, *(id(a) if isinstance(a, np.ndarray) else tuple(a) if isinstance(a, list) else a for a in args))
        hit = self.fields.get(key)
        if hit is None or any(x is not y for x, y in zip(hit[0], args) if isinstance(y, np.ndarray)):
            hit = self.fields[key] = (args, " ".join(call_fields(method, *args)))
        return f"{method} {handle} {hit[1]}".rstrip()

    def discard(self, handle: int) -> None:
        self.shared["closing"].append(f"close {handle}")

    def observe_lines(self, handle: int, live: Sequence[int]) -> list[str]:
        """The requests that observe a state: `reads`, then the other groups' tables."""
        return [self.request(handle, r) for r in reads(live, self.g.n_layers) + group_reads(live, self.g.group_layers)]

    @staticmethod
    def request(handle: int, r: Read) -> str:
        return " ".join(map(str, (r.method, handle, *r.args)))

    def observation(self, answers: list[str], live: Sequence[int]) -> Observation:
        if live is CLOSED:
            return Observation(tuple(a.split(" ")[1] if a.startswith("err ") else a for a in answers), {}, wire=True)
        main = reads(live, self.g.n_layers)
        values: list[str] = []
        tables: dict[Any, list[int]] = {}
        for r, answer in zip(main, answers):
            if r.method != "block_table":
                values.append(answer)
                continue
            tables[r.table_key], parsed = self.table(answer, -1)
            values.append("ok" if parsed else answer)  # one that does not parse is shown as it is
        for r, answer in zip(group_reads(live, self.g.group_layers), answers[len(main) :]):
            tables[r.table_key], _ = self.table(answer, -2)  # another group's: held in the tables only
        return Observation(tuple(values), tables, wire=True)

    @staticmethod
    def table(answer: str, missing: int) -> tuple[list[int], bool]:
        """A block_table answer's ids, and whether it parsed: an answer that is no `ok` list, or does not
        parse, is [missing] (a table no model has: -1 for group 0's, -2 for another group's)."""
        try:
            return (parse_list(answer[3:]) if answer.startswith("ok ") else [missing]), True
        except Exception:  # noqa: BLE001 - any answer a driver writes is compared, none raises here
            return [missing], False

    @staticmethod
    def answer(method: str, response: str) -> Answer:
        head, _, rest = response.partition(" ")
        if head == "ok":
            if method == "add_seq":
                try:
                    return "ok", int(rest)
                except ValueError:
                    return "ok", rest
            return "ok", None
        if head == "err":
            return "err", rest.partition(" ")[0]
        return "err", f"out of protocol: {response[:80]!r}"

    def refused(self, handle: int, calls: Sequence[Call], live: Sequence[int]) -> Refusals:
        return self.refused_async(handle, calls, live)()

    def refused_async(self, handle: int, calls: Sequence[Call], live: Sequence[int]) -> Callable[[], Refusals]:
        ticket = self.send([self.line(handle, method, args) for method, args in calls] + self.observe_lines(handle, live))

        def done() -> Refusals:
            answers = self.collect(ticket)
            n = len(calls)
            return [self.answer(m, a) for (m, _), a in zip(calls, answers[:n])], self.observation(answers[n:], live)

        return done

    def succeeded(self, handle: int, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> list[Outcome]:
        return self.succeeded_async(handle, path, items, own)()

    def succeeded_async(self, handle: int, path: Sequence[Call], items: Sequence[Item], own: bool = True) -> Callable[[], list[Outcome]]:
        lines: list[str] = []
        spans = []
        for n, item in enumerate(items):
            if own and n == len(items) - 1:
                target = handle
            else:
                new, target = self.new_line(self.g)
                lines.append(new)
                lines += [self.line(target, m, a) for m, a in path]
            at = len(lines)
            lines.append(self.line(target, item.method, item.args))
            lines += self.observe_lines(target, item.live)
            spans.append((target, at, len(lines), target == handle))
            if not item.keep and target != handle:
                lines.append(f"close {target}")
        ticket = self.send(lines)

        def done() -> list[Outcome]:
            answers = self.collect(ticket)
            out: list[Outcome] = []
            for item, (target, at, end, last) in zip(items, spans):
                if not last and answers[at - len(path) - 1] != f"ok {target}":
                    raise RuntimeError(f"new answered {answers[at - len(path) - 1]!r}, expected 'ok {target}' (handles must be 0, 1, 2, ...)")
                out.append(Outcome(self.answer(item.method, answers[at]), self.observation(answers[at + 1 : end], item.live), target if item.keep else None))
            return out

        return done

    def copy(self, handle: int, path: Sequence[Call]) -> int:
        return self.replay(path)

    def replay(self, path: Sequence[Call]) -> int:
        """A new handle with the calls of `path` made on it."""
        fresh = self.new(self.g)
        self.exchange([self.line(fresh, m, a) for m, a in path])
        return fresh

    def call(self, handle: int, method: str, args: tuple[Any, ...]) -> Answer:
        return self.answer(method, self.exchange([self.line(handle, method, args)])[0])

    def observe(self, handle: int, live: Sequence[int]) -> Observation:
        return self.observation(self.exchange(self.observe_lines(handle, live)), live)

    def expect(self, model: ModelKVCache, live: Sequence[int]) -> tuple[Any, ...]:
        if live is CLOSED:
            return ("invalid_argument", "invalid_argument")
        return tuple(self.expected(model, r) for r in reads(live, model.n_layers))

    @staticmethod
    def expected(model: ModelKVCache, r: Read) -> str:
        """The oracle's answer to one read, as the driver must write it (a table's ids are checked apart)."""
        if r.method == "gather":
            (k, shape), (v, _) = gather_bits(model, *r.args)
            hexes = [np.frombuffer(x, "<u2").astype(">u2").tobytes().hex() or "-" for x in (k, v)]
            return f"ok {shape[1]} {hexes[0]} {hexes[1]}"  # a window gathers fewer than seq_len
        if r.method == "seq_len":
            return f"ok {positions(model, *r.args)}"
        if r.method == "block_table":
            return "ok"
        if r.method == "stats":
            return f"ok {format_stats(model.stats())}"
        return f"ok {model.num_free_blocks()}"

    def stop(self) -> None:
        if not self.process.dead and self.shared["closing"]:
            self.exchange([])
        self.process.stop()

