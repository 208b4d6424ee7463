"""A vector being written: a scripted session of calls on the oracle, recorded as wire requests,
whose answers are the oracle's (under any profile) when the transcript is taken.

Also the decorators a family module registers its vectors with, and `chunk`, the K and V every
family appends (the suite's own builder, testkit.chunks, in float16).
"""

from __future__ import annotations

from typing import Any, Callable

from oracle import as_impl
from oracle.profile import Profile
from testkit.chunks import Array, make_chunk
from vectorgen.flags import FLAGS, NEEDS
from wire.record import Recorder
from wire.transcript import Transcript


def chunk(heads: int, tokens: int, dims: int, seed: int) -> tuple[Array, Array]:
    """k and v [heads, tokens, dims] float16, seeded, different from each other (the suite's builder)."""
    return make_chunk(heads, tokens, dims, seed, "float16")


class Script:
    """A vector being written: calls on the oracle, recorded as requests."""

    def __init__(self, vid: str, comment: str, flags: str) -> None:
        for flag in flags.split():
            assert flag in FLAGS, f"{vid}: flag {flag!r} is not explained in FLAGS"
        self.meta = {"id": vid, "comment": comment, "flags": flags}
        needs = sorted({NEEDS[flag] for flag in flags.split() if flag in NEEDS})
        if needs:
            self.meta["requires"] = " ".join(needs)
        self.recorder = Recorder()
        self.impl = self.recorder.wrap(as_impl)
        self.layers: dict[int, int] = {}  # id of a cache -> its number of layers
        self.groups: dict[int, list[int]] = {}  # id of a hybrid cache -> the first layer of each group after group 0

    def new(
        self, *sizes: int, prefix_caching: bool = False, sliding_window: int | None = None,
        layer_windows: tuple[int | None, ...] | None = None,
    ) -> Any:
        """A cache of the five sizes and options (recorded), remembered for observe()."""
        hybrid = {} if layer_windows is None else {"layer_windows": layer_windows}
        cache = self.impl.PagedKVCache(*sizes, prefix_caching=prefix_caching, sliding_window=sliding_window, **hybrid)
        self.layers[id(cache)] = sizes[2]
        if layer_windows is not None:
            self.groups[id(cache)] = [layer_windows.index(w) for w in dict.fromkeys(layer_windows)][1:]
        return cache

    def raw(self, line: str) -> None:
        """A request sent as written (a hello, a quit, a malformed request): its answer is the reference driver's."""
        self.recorder.request(line)

    def attempt(self, call: Callable[..., Any], *args: Any) -> None:
        """A call the contract refuses: its error is the expected answer."""
        try:
            call(*args)
        except (KeyError, ValueError, MemoryError, as_impl.OutOfBlocks):
            return
        raise AssertionError(f"{self.meta['id']}: {call.__name__}{args} was expected to fail")

    def observe(self, cache: Any, seqs: list[int], tables: bool = True) -> None:
        """Every observable: stats, the free count, and each sequence's table (unless not `tables`), lengths and gathers."""
        cache.stats()
        cache.num_free_blocks()
        for s in seqs:
            if tables:
                cache.block_table(s)
                for layer in self.groups.get(id(cache), ()):  # every other group's table (hybrid models)
                    cache.block_table(s, layer)
            for layer in range(self.layers[id(cache)]):
                cache.seq_len(s, layer)
                cache.gather(s, layer)

    def transcript(self, profile: Profile = Profile()) -> Transcript:
        """The recorded calls with the oracle's answers under `profile`. One that does its own handshake
        needs nothing announced (docs/PROTOCOL.md, "Transcripts"): no capability, no block table."""
        transcript = self.recorder.transcript(dict(self.meta), as_impl.under(profile))
        if transcript.own_handshake:
            tables = [r for r, _ in transcript.steps if r.startswith("block_table ")]
            assert not tables and not transcript.requires, f"{self.meta['id']}: its own handshake, yet {tables or transcript.requires}"
        return transcript


Vector = Callable[[], Script]  # writes one vector's Script afresh each call


def collect(into: list[Vector]) -> Callable[[Vector], Vector]:
    """A decorator that appends a vector to its family's list, in the order written."""

    def register(make: Vector) -> Vector:
        into.append(make)
        return make

    return register


def scripted(into: list[Vector], vid: str, comment: str, flags: str) -> Callable[[Callable[[Script], None]], Vector]:
    """A decorator for a body that fills a fresh Script(vid, comment, flags): the vector, appended to `into`."""

    def wrap(body: Callable[[Script], None]) -> Vector:
        def make() -> Script:
            s = Script(vid, comment, flags)
            body(s)
            return s

        make.__name__ = body.__name__
        into.append(make)
        return make

    return wrap
