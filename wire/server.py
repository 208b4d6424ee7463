"""Serve a Python implementation over the wire protocol (docs/PROTOCOL.md).

`Dispatcher(module).handle(line)` answers one request line with one response line; it is
the driver's whole logic, and `serve` is the stdin/stdout loop around it. Transcripts are
replayed through the same Dispatcher (ci/gate --replay, and the vectors' expected answers
come from the oracle served this way), so there is one reading of every request.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from types import ModuleType
from typing import Any, BinaryIO, Callable

import numpy as np

from .codec import (
    CAPABILITY,
    NEW_FORM,
    NEW_OPTIONS,
    PAGE_TABLE_VERBS,
    PAGE_TABLES,
    VERSION,
    ProtocolError,
    format_list,
    format_payload,
    format_stats,
    parse_int,
    parse_list,
    parse_new_options,
    parse_payload,
    parse_shape,
)


def capabilities(module: ModuleType) -> list[str]:
    """What the implementation offers beyond the base contract: the capability of each option of `new` that its
    constructor takes as a keyword (`prefix_caching`, `sliding_window`; `hybrid` for `layer_windows`), and
    `page_tables` when its cache has the three calls of page tables for kernels (CONTRACT.md)."""
    try:
        params = inspect.signature(module.PagedKVCache).parameters
    except (TypeError, ValueError):
        return []
    cls = inspect.unwrap(module.PagedKVCache)  # a class, or a factory that wraps one (oracle.as_impl.under)
    tables = all(callable(getattr(cls, name, None)) for name in PAGE_TABLE_VERBS)
    pages = [PAGE_TABLES] if tables else []
    return [CAPABILITY[option] for option in NEW_OPTIONS if option in params] + pages


def profile_words(module: ModuleType) -> list[str]:
    """The profile the module declares (its `PROFILE`, `OPTION=VALUE,...`), as hello's `OPTION=VALUE` words."""
    return str(getattr(module, "PROFILE", "") or "").replace(",", " ").split()


def error_kind(module: ModuleType, exc: BaseException) -> str:
    """The protocol's KIND for an exception the implementation raised."""
    if isinstance(exc, module.OutOfBlocks):
        return "out_of_blocks"
    if isinstance(exc, KeyError):
        return "unknown_sequence"
    if isinstance(exc, (ValueError, TypeError)):
        return "invalid_argument"
    if isinstance(exc, MemoryError):  # a pool too large to allocate (CONTRACT.md)
        return "out_of_memory"
    return "internal"


def one_line(text: str) -> str:
    return " ".join(str(text).split()) or "-"


class Dispatcher:
    """The caches of one driver session, by handle, and the reading of every request."""

    def __init__(self, module: ModuleType, name: str) -> None:
        self.module = module
        self.name = name
        self.caps = capabilities(module)
        self.profile = profile_words(module)
        self.caches: list[Any] = []  # handle -> cache (closed ones stay, so their calls answer invalid_argument)
        self.greeted = False

    def handle(self, line: str) -> tuple[str, bool]:
        """The response to one request line, and whether the session ends."""
        fields = line.rstrip("\r\n").split(" ")
        verb, args = fields[0], fields[1:]
        try:
            if verb == "hello" or not self.greeted:
                return self.hello(verb, args), False
            if verb == "quit":
                expect(args, 0, "quit")
                return "ok", True
            if verb == "new":
                return self.new(args), False
            method = self.VERBS.get(verb)
            if method is None:
                raise ProtocolError(f"unknown request {verb!r}")
            if not args:
                raise ProtocolError(f"{verb} needs a cache handle")
            cache = self.cache(args[0])
            return method(self, cache, args[1:]), False
        except ProtocolError as exc:
            return f"err protocol {one_line(str(exc))}", False
        except Exception as exc:  # noqa: BLE001 - every error of the implementation crosses as its kind
            kind = error_kind(self.module, exc)
            text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            if kind == "internal":
                text = f"{type(exc).__name__}: {exc}"
            return f"err {kind} {one_line(str(text))}", False

    # -- session ---------------------------------------------------------------------------

    def hello(self, verb: str, args: list[str]) -> str:
        """The handshake: `hello 1` first, once; any other first request, and a second hello, are protocol errors."""
        if self.greeted:
            raise ProtocolError("hello was already answered: one handshake a session")
        if verb != "hello":
            raise ProtocolError("the first request must be 'hello 1'")
        expect(args, 1, "hello VERSION")
        if parse_int(args[0], "version") != VERSION:
            raise ProtocolError("unsupported version")
        self.greeted = True
        return " ".join(["ok", str(VERSION), self.name, *self.caps, *self.profile])

    def new(self, args: list[str]) -> str:
        if len(args) < 5:
            raise ProtocolError(f"expected '{NEW_FORM}'")
        kwargs = parse_new_options(args[5:])
        missing = [CAPABILITY[option] for option in kwargs if CAPABILITY[option] not in self.caps]
        if missing:
            raise ProtocolError(f"this driver does not announce {missing[0]}")
        sizes = [parse_int(a, "size") for a in args[:5]]
        self.caches.append(self.module.PagedKVCache(*sizes, **kwargs))
        return f"ok {len(self.caches) - 1}"

    def cache(self, text: str) -> Any:
        handle = parse_int(text, "handle")
        if not 0 <= handle < len(self.caches):
            raise ProtocolError(f"no cache has handle {handle}")
        return self.caches[handle]

    # -- calls -------------------------------------------------------------------------------

    def add_seq(self, cache: Any, args: list[str]) -> str:
        if len(args) == 2:
            if "prefix_caching" not in self.caps:
                raise ProtocolError("token lists need the prefix_caching capability")
            hits = cache.add_seq(parse_int(args[0], "sequence"), parse_list(args[1], "token"))
        else:
            expect(args, 1, "add_seq C S [TOKENS]")
            hits = cache.add_seq(parse_int(args[0], "sequence"))
        return f"ok {0 if hits is None else int(hits)}"

    def fork(self, cache: Any, args: list[str]) -> str:
        expect(args, 2, "fork C P CH")
        cache.fork(parse_int(args[0], "parent"), parse_int(args[1], "child"))
        return "ok"

    def append(self, cache: Any, args: list[str]) -> str:
        expect(args, 6, "append C S LAYER KSHAPE VSHAPE KHEX VHEX")
        seq, layer = parse_int(args[0], "sequence"), parse_int(args[1], "layer")
        k = parse_payload(args[4], parse_shape(args[2]))
        v = parse_payload(args[5], parse_shape(args[3]))
        cache.append(seq, layer, k, v)
        return "ok"

    def extend(self, cache: Any, args: list[str]) -> str:
        expect(args, 2, "extend C S TOKENS")
        if "prefix_caching" not in self.caps:
            raise ProtocolError("extend needs the prefix_caching capability")
        cache.extend(parse_int(args[0], "sequence"), parse_list(args[1], "token"))
        return "ok"

    def gather(self, cache: Any, args: list[str]) -> str:
        expect(args, 2, "gather C S LAYER")
        k, v = cache.gather(parse_int(args[0], "sequence"), parse_int(args[1], "layer"))
        k, v = np.asarray(k), np.asarray(v)
        return f"ok {k.shape[1]} {format_payload(k)} {format_payload(v)}"

    def seq_len(self, cache: Any, args: list[str]) -> str:
        expect(args, 2, "seq_len C S LAYER")
        return f"ok {int(cache.seq_len(parse_int(args[0], 'sequence'), parse_int(args[1], 'layer')))}"

    def block_table(self, cache: Any, args: list[str]) -> str:
        if len(args) == 2:  # the table of a layer's group
            if "hybrid" not in self.caps:
                raise ProtocolError("block_table with a layer needs the hybrid capability")
            table = cache.block_table(parse_int(args[0], "sequence"), parse_int(args[1], "layer"))
        else:
            expect(args, 1, "block_table C S [LAYER]")
            table = cache.block_table(parse_int(args[0], "sequence"))
        return f"ok {format_list(table.tolist())}"

    def page_table(self, cache: Any, args: list[str]) -> str:
        self.need(PAGE_TABLES, "page_table")
        expect(args, 3, "page_table C LAYER P IDS")
        layer, page_size = parse_int(args[0], "layer"), parse_int(args[1], "page size")
        arrays = cache.page_table(parse_list(args[2], "sequence"), layer, page_size)
        return "ok " + " ".join(format_list(np.asarray(a).tolist()) for a in arrays)

    def slot_mapping(self, cache: Any, args: list[str]) -> str:
        self.need(PAGE_TABLES, "slot_mapping")
        expect(args, 4, "slot_mapping C S LAYER START COUNT")
        seq, layer, start, count = (parse_int(a, what) for a, what in zip(args, ("sequence", "layer", "start", "count")))
        return f"ok {format_list(np.asarray(cache.slot_mapping(seq, layer, start, count)).tolist())}"

    def kv_pages(self, cache: Any, args: list[str]) -> str:
        """Pages FIRST .. FIRST+COUNT-1 of the layer's K and V pool in HND; a range outside the pool is the
        cache's ValueError (invalid_argument), after the call's own checks."""
        self.need(PAGE_TABLES, "kv_pages")
        expect(args, 4, "kv_pages C LAYER P FIRST COUNT")
        layer, page_size, first, count = (parse_int(a, what) for a, what in zip(args, ("layer", "page size", "first", "count")))
        k, v = cache.kv_pages(layer, page_size)
        pages = len(k)
        if first < 0 or count < 0 or first + count > pages:
            raise ValueError(f"pages {first} .. {first + count - 1} are not pages of the pool, 0 .. {pages - 1}")
        return f"ok {format_payload(np.asarray(k[first : first + count]))} {format_payload(np.asarray(v[first : first + count]))}"

    def need(self, capability: str, verb: str) -> None:
        if capability not in self.caps:
            raise ProtocolError(f"{verb} needs the {capability} capability")

    def free(self, cache: Any, args: list[str]) -> str:
        expect(args, 1, "free C S")
        cache.free(parse_int(args[0], "sequence"))
        return "ok"

    def stats(self, cache: Any, args: list[str]) -> str:
        expect(args, 0, "stats C")
        return f"ok {format_stats(cache.stats())}"

    def num_free_blocks(self, cache: Any, args: list[str]) -> str:
        expect(args, 0, "num_free_blocks C")
        return f"ok {int(cache.num_free_blocks())}"

    def close(self, cache: Any, args: list[str]) -> str:
        expect(args, 0, "close C")
        cache.close()
        return "ok"

    VERBS: dict[str, Callable[["Dispatcher", Any, list[str]], str]] = {
        "add_seq": add_seq,
        "fork": fork,
        "append": append,
        "extend": extend,
        "gather": gather,
        "seq_len": seq_len,
        "block_table": block_table,
        "page_table": page_table,
        "slot_mapping": slot_mapping,
        "kv_pages": kv_pages,
        "free": free,
        "stats": stats,
        "num_free_blocks": num_free_blocks,
        "close": close,
    }


def expect(args: list[str], count: int, form: str) -> None:
    if len(args) != count:
        raise ProtocolError(f"expected '{form}'")


def serve(dispatcher: Dispatcher, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Answer requests until `quit` or end of input; exit status 0.

    Each read takes what has arrived (`read1`: blocking only when nothing has), and its answers
    go out in one write and one flush: a client that sends a run of requests gets their answers
    together, and one that waits for each answer gets it at once (nothing is held back for a
    request that has not come).
    """
    partial = b""
    while True:
        chunk = stdin.read1(1 << 16)  # type: ignore[attr-defined]  # BufferedReader and BytesIO have it
        lines = (partial + chunk).split(b"\n")
        partial = lines.pop() if chunk else b""  # at the end of input, a last line without its newline counts
        out, done = [], False
        for raw in lines:
            if not raw and not chunk:
                continue
            response, done = dispatcher.handle(raw.decode("ascii", errors="replace"))
            out.append(response.encode("ascii", errors="replace") + b"\n")
            if done:
                break
        if out:
            stdout.write(b"".join(out))
            stdout.flush()
        if done or not chunk:
            return 0


def main(argv: list[str] | None = None, default_impl: str = "paged") -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m wire.driver",
        description="Serve a Python implementation of the cache over the wire protocol (docs/PROTOCOL.md) on stdin/stdout.",
    )
    parser.add_argument("--impl", default=default_impl, help=f"module exporting PagedKVCache and OutOfBlocks (default {default_impl})")
    args = parser.parse_args(argv)
    module = importlib.import_module(args.impl)
    name = "paged-python" if args.impl == "paged" else f"python:{args.impl}"
    return serve(Dispatcher(module, name), sys.stdin.buffer, sys.stdout.buffer)
