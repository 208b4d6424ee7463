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

import weakref
from types import TracebackType
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from .codec import ProtocolError, call_fields, new_fields, page_call, parse_int, parse_list, parse_payload, parse_stats
from .process import DEFAULT_TIMEOUT, ERRORS, DriverError, DriverProcess, OutOfBlocks
from .target import Impl, parse


class ExecImpl:
    """An implementation module whose PagedKVCache lives in a driver process ("exec:CMD")."""

    wire = True

    def __init__(self, spec: str | Impl, timeout: float = DEFAULT_TIMEOUT) -> None:
        impl = parse(spec)
        if impl.command is None:
            raise ValueError(f"not an exec: implementation: {impl.text!r}")
        self.command = impl.command
        self.timeout = timeout
        self.__name__ = impl.text
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
        self._sizes = int(fields[0]), int(fields[1])  # N and B: what a page-table call's defaults need
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

    def page_table(
        self, seq_ids: Iterable[int], layer: int, page_size: int | None = None
    ) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]]:
        """(indptr, indices, last_page_len); `page_table C LAYER P IDS`, P = B for None."""
        fields = self._call("page_table", *page_call("page_table", (seq_ids, layer, page_size), {}, self._sizes))
        if len(fields) != 3:
            raise DriverError(f"driver answered page_table with {len(fields)} fields, not 3 (INDPTR INDICES LASTLENS)")
        try:
            indptr, indices, last = (np.array(parse_list(f, "page table entry"), dtype=np.int32) for f in fields)
        except ProtocolError as exc:
            raise DriverError(f"driver answered page_table with a field that does not parse: {exc}") from None
        return indptr, indices, last

    def slot_mapping(self, seq_id: int, layer: int, start: int, count: int) -> NDArray[np.int64]:
        (slots,) = self._call("slot_mapping", seq_id, layer, start, count)
        return np.array(parse_list(slots, "slot"), dtype=np.int64)

    def kv_pages(self, layer: int, page_size: int | None = None) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """K and V pools [pages, H, P, D] (HND): `kv_pages C LAYER P 0 PAGES`, every page; each decoded into memory
        of its own (a copy, not a view: a driver's pool is in another process)."""
        args = page_call("kv_pages", (layer, page_size), {}, self._sizes)
        k_hex, v_hex = self._call("kv_pages", *args)
        shape = (args[3], self.n_kv_heads, args[1], self.d_head)
        return parse_payload(k_hex, shape), parse_payload(v_hex, shape)

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
