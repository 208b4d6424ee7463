"""Recording Python calls on a cache as wire requests, to write them down as a transcript.

`Recorder.wrap(module)` gives a module-like object whose PagedKVCache makes every call on
the real cache and logs it as the request a driver would be sent. `transcript()` serves
those requests from a reference implementation (the oracle) for the expected answers,
and `failure()` does so under the profile under test. The gate's failure files, a state
machine's failure notes (tests/machines/report.py) and the conformance vectors are written
this way.
"""

from __future__ import annotations

from itertools import count
from types import SimpleNamespace
from collections.abc import Iterator
from typing import Any

from oracle.as_impl import under
from oracle.profile import Profile

from .codec import PAGE_TABLE_VERBS, call_fields, new_fields, page_call
from .server import Dispatcher
from .transcript import OWN_HANDSHAKE, Transcript

CALLS = (
    "add_seq", "extend", "fork", "append", "gather", "seq_len", "block_table", "free", "stats", "num_free_blocks", "close",
    *PAGE_TABLE_VERBS,
)


class Recorder:
    """The calls the tests make, as wire requests, since the current example began."""

    def __init__(self) -> None:
        self.calls: list[tuple[int | None, str, list[str]] | str] = []  # (cache key or None, verb, fields), or a note
        self.keys = count()
        self.wrapped: dict[int, tuple[Any, Any]] = {}  # id(module) -> (module, kept alive so the id stays its own; wrapper)

    def reset(self) -> None:
        self.calls.clear()

    def log(self, key: int, name: str, args: tuple[Any, ...]) -> None:
        try:
            self.calls.append((key, name, call_fields(name, *args)))
        except TypeError:
            self.calls.append(f"a Python call with no wire form (not sent): {name}{args!r}"[:300])

    def request(self, line: str) -> None:
        """A request that names no cache, sent as it is (a second `hello`, say): its answer is the reference's."""
        verb, *fields = line.split(" ")
        self.calls.append((None, verb, fields))

    def wrap(self, module: Any) -> Any:
        """A module-like object whose PagedKVCache records every call, then makes it on the real cache."""
        if id(module) not in self.wrapped:
            self.wrapped[id(module)] = module, SimpleNamespace(
                PagedKVCache=recording_class(module.PagedKVCache, self),
                OutOfBlocks=module.OutOfBlocks,
                capabilities=getattr(module, "capabilities", None),
                __file__=getattr(module, "__file__", "?"),
                __name__=getattr(module, "__name__", "?"),
            )
        return self.wrapped[id(module)][1]

    def failure(self, comment: str, impl: str, profile: Profile) -> Transcript:
        """The recorded calls as a failure's transcript: the oracle's answers under `profile`, which the header names."""
        meta = {"id": "failure", "comment": comment, "impl": impl}
        if str(profile):
            meta["profile"] = str(profile)
        return self.transcript(meta, under(profile))

    def transcript(self, meta: dict[str, str], reference_module: Any) -> Transcript:
        """The recorded requests, each with the reference's answer (served by the Dispatcher a Python driver uses),
        after a `hello` of the replayer's unless `meta` says the transcript does its own handshake. An answered
        `hello` is written `ok VERSION`: what follows is each driver's own (docs/PROTOCOL.md, "Transcripts")."""
        reference = Dispatcher(reference_module, "reference")
        if meta.get("handshake") != OWN_HANDSHAKE:
            reference.handle("hello 1")
        handles: dict[int, str] = {}
        out = Transcript(meta=meta)
        for call in self.calls:
            if isinstance(call, str):
                out.notes.append(call)
                continue
            key, name, fields = call
            if name == "new" or key is None:
                request = " ".join([name, *fields])
            elif key in handles:
                request = " ".join([name, handles[key], *fields])
            else:
                out.notes.append(f"a call on a cache the oracle refused to make (not sent): {name}")
                continue
            before = {h: len(log) for h, log in ended(reference).items()}
            response = reference.handle(request)[0]
            if name == "hello" and response.startswith("ok "):
                response = " ".join(response.split(" ")[:2])
            if name == "new" and key is not None and response.startswith("ok "):
                handles[key] = response.split(" ")[1]
            out.steps.append((request, response))
            for handle, log in ended(reference).items():
                if len(log) > before.get(handle, 0):
                    out.released.setdefault(len(out.steps) - 1, []).append((str(handle), log[before.get(handle, 0) :]))
        return out


def ended(reference: Dispatcher) -> dict[int, list[int]]:
    """Each reference cache's log of the blocks whose lifetime ended (`ModelKVCache.ended`), by handle."""
    return {h: c.ended for h, c in enumerate(reference.caches) if hasattr(c, "ended")}


def recording_class(inner: Any, recorder: Recorder) -> type:
    class Recorded:
        def __init__(self, *sizes: Any, prefix_caching: Any = False, sliding_window: Any = None, layer_windows: Any = None) -> None:
            self._key = next(recorder.keys)
            self._sizes = sizes[:2]  # N and B: a page-table call's defaults on the wire (`page_call`)
            kwargs: dict[str, Any] = {"prefix_caching": prefix_caching} if prefix_caching is not False else {}
            if sliding_window is not None:
                kwargs["sliding_window"] = sliding_window
            if layer_windows is not None:
                kwargs["layer_windows"] = layer_windows
            try:
                if prefix_caching not in (False, True) or type(prefix_caching) is not bool:
                    raise TypeError("prefix_caching has no wire form but the word's presence")
                recorder.calls.append((self._key, "new", new_fields(sizes, prefix_caching, sliding_window, layer_windows)))
            except TypeError:
                recorder.calls.append(f"a Python call with no wire form (not sent): PagedKVCache{sizes!r}, {kwargs!r}")
            self._inner = inner(*sizes, **kwargs)

        def __enter__(self) -> Any:
            self._inner.__enter__()
            return self

        def __exit__(self, *exc: Any) -> Any:
            recorder.log(self._key, "close", ())
            return self._inner.__exit__(*exc)

        def __getattr__(self, name: str) -> Any:  # what no request carries (a renamed cache's adopt): unrecorded
            if name.startswith("_"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    def method(name: str) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if name == "page_table" and args and isinstance(args[0], Iterator):  # read once: for the request and the call
                args = (list(args[0]), *args[1:])
            try:
                wire_args = page_call(name, args, kwargs, self._sizes) if name in PAGE_TABLE_VERBS else args
            except TypeError:  # arguments the call itself refuses: no request (the call raises below)
                wire_args = None
            if wire_args is None:
                recorder.calls.append(f"a Python call with no wire form (not sent): {name}{args!r}"[:300])
            else:
                recorder.log(self._key, name, wire_args)
            return getattr(self._inner, name)(*args, **kwargs)

        call.__name__ = name
        return call

    for name in CALLS:
        setattr(Recorded, name, method(name))
    Recorded.__name__ = Recorded.__qualname__ = "PagedKVCache"
    return Recorded
