"""The adapters' own half: CONTRACT.md's surface around an engine's block manager.

An engine's block manager knows blocks, reference counts, a free queue and prefix hashes; it
has no K/V store, no per-layer lengths and no fork. This module supplies exactly those, the same
for every engine, and leaves every decision about blocks to a `Backend` (one per engine, in
vllm_v1.py and nano_vllm.py), which makes it through the engine's own code:

- the adapter's own: argument checks (paged.checks, the project's, so that errors match the
  contract), one length per layer, the K/V store (a float16 array indexed by block id),
  copying a block's data on copy on write, the declared-tokens check, `stats()` arithmetic;
- the backend's (the engine's): which block a sequence takes, hits, capacity, registration
  of full blocks, references, release order, eviction.

Counted calls: the backends hold the engine's block manager objects through `Engine`, which counts
every call of one of their methods; `engine_calls()` (exported by each adapter, read by the suite
before and after each test: docs/GATING.md) says how many there have been, so a test that passed
without one (an argument check, the suite's own tests) is known not to have reached the engine.

Per-layer lengths: the engine sees one length per sequence. The table must cover the longest
layer, so the backend grows the engine's sequence to max(lens); a block is full only when every
layer filled it, so the backend registers up to min(lens) // B blocks.

Sliding window (CONTRACT.md, opt-in; only an adapter whose constructor takes `sliding_window`): `gather`
returns the window's positions, and each append ends with the backend's `release(min(lens))`, after the
registration; a released table entry is -1, which no write or gather reaches. Hybrid models (vllm_hybrid.py):
`_group(layer)` gives the layer's group (a view of the backend holding that group's table, its layers, its
window), and an append, a gather and `block_table` work on that group alone, as above with its layers' lengths.
"""

from __future__ import annotations

import copy
from types import TracebackType
from typing import Any, Iterable, Protocol

import numpy as np
from numpy.typing import NDArray

from paged.checks import as_chunk, as_int, as_sizes, as_tokens, as_window, layer_index, live, zeroed_pools


_calls = 0


def engine_calls() -> int:
    """How many calls into the engine's block manager (methods of objects held through `Engine`) there have been."""
    return _calls


class Engine:
    """One of the engine's objects, seen through the count: each call of one of its methods adds one.
    Attributes that are not methods (the engine's fields and containers) are read and set as they are."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            global _calls
            _calls += 1
            return value(*args, **kwargs)

        return counted

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __deepcopy__(self, memo: dict[int, Any]) -> "Engine":
        return Engine(copy.deepcopy(self._target, memo))


class OutOfBlocks(RuntimeError):
    """An append needs more blocks (new ones plus copy-on-write copies) than the engine can give."""


class Backend(Protocol):
    """What an engine adapter provides; block ids are the exposed ones, 0 .. N-1."""

    def add(self, sid: int, tokens: list[int]) -> int: ...  # a new sequence; returns positions served
    def extend(self, sid: int, tokens: list[int]) -> None: ...
    def fork(self, parent: int, child: int) -> None: ...
    def table(self, sid: int) -> list[int]: ...
    def holders(self, block: int) -> int: ...
    def can_take(self, n: int) -> bool: ...  # n blocks could be taken now
    def grow(self, sid: int, old_len: int, new_len: int, reserve: int) -> bool: ...  # blocks for new_len positions, `reserve` more left free; False: refused, nothing changed
    def cow(self, sid: int, index: int) -> int: ...  # a private block for table[index]; returns its id
    def register(self, sid: int, full_positions: int) -> None: ...
    def free(self, sid: int) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def num_free(self) -> int: ...
    # With a window only (vllm_window.py, a hybrid model's window group), and so not part of this protocol:
    # `release(sid, settled)` lets go of the blocks before the window of `settled` positions (the smallest
    # layer length), at the end of each append.


class _Seq:
    __slots__ = ("lens", "tokens")

    def __init__(self, lens: list[int], tokens: list[int]) -> None:
        self.lens = lens
        self.tokens = tokens


class Frontend:
    """PagedKVCache over a Backend; subclasses set `make_backend`."""

    _closed = False

    sliding_window: int | None = None  # set by a subclass whose constructor takes it (_open)

    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> Backend:
        raise NotImplementedError

    def __init__(
        self, num_blocks: int, block_size: int, n_layers: int, n_kv_heads: int, d_head: int, *, prefix_caching: bool = False
    ) -> None:
        self._open((num_blocks, block_size, n_layers, n_kv_heads, d_head), prefix_caching, None)

    def _open(self, sizes_in: tuple[object, ...], prefix_caching: bool, sliding_window: object) -> None:
        """The constructor's work; a subclass with the window's capability passes `sliding_window` on (CONTRACT.md:
        checked after prefix_caching, before memory). Without it the constructor does not take the keyword, so
        the adapter does not announce the capability (wire.server.capabilities reads the signature)."""
        sizes = as_sizes(sizes_in, prefix_caching)
        self.sliding_window = as_window(sliding_window, "sliding_window")
        self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head = sizes
        self._check_more()
        self.prefix_caching = prefix_caching
        shape = (self.num_blocks, self.n_layers, self.n_kv_heads, self.block_size, self.d_head)
        self._k, self._v = zeroed_pools(shape)  # MemoryError when the machine will not give them
        self._engine = self.make_backend(self.num_blocks, self.block_size, prefix_caching)
        self._seqs: dict[int, _Seq] = {}

    def _check_more(self) -> None:
        """A subclass's own constructor arguments, checked after `sliding_window` and before memory (vllm_hybrid.py)."""

    # -- lifecycle
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        del self._k, self._v
        self._seqs.clear()

    def __enter__(self) -> Frontend:
        self._check_open()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # -- sequences
    def add_seq(self, seq_id: int, tokens: Iterable[int] = ()) -> int:
        self._check_open()
        sid = as_int(seq_id, "seq_id")
        if sid in self._seqs:
            raise ValueError(f"sequence {sid} is already live")
        ids = as_tokens(tokens)
        if not self.prefix_caching:
            ids = []
        served = self._engine.add(sid, ids)
        self._seqs[sid] = _Seq([served] * self.n_layers, ids)
        return served

    def extend(self, seq_id: int, tokens: Iterable[int]) -> None:
        seq = self._seq(seq_id)
        ids = as_tokens(tokens)
        if self.prefix_caching and ids:
            seq.tokens += ids
            self._engine.extend(as_int(seq_id, "seq_id"), ids)

    def fork(self, parent: int, child: int) -> None:
        src = self._seq(parent)
        cid = as_int(child, "child")
        if cid in self._seqs:
            raise ValueError(f"sequence {cid} is already live")
        self._engine.fork(as_int(parent, "parent"), cid)
        self._seqs[cid] = _Seq(src.lens.copy(), src.tokens.copy())

    def free(self, seq_id: int) -> None:
        self._seq(seq_id)
        sid = as_int(seq_id, "seq_id")
        self._engine.free(sid)
        del self._seqs[sid]

    # -- data
    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        seq = self._seq(seq_id)
        sid = as_int(seq_id, "seq_id")
        li = self._layer(layer)
        k_arr, v_arr = as_chunk(k, v, self.n_kv_heads, self.d_head)
        start = seq.lens[li]
        count = k_arr.shape[1]
        if self.prefix_caching and start + count > len(seq.tokens):
            raise ValueError(
                f"positions {start} .. {start + count - 1} of layer {li} need declared token ids; "
                f"sequence {seq_id} has declared {len(seq.tokens)}"
            )
        bs = self.block_size
        eng, layers, window = self._group(li)
        table = eng.table(sid)
        first, last = start // bs, (start + count - 1) // bs
        shared = [i for i in range(first, min(last + 1, len(table))) if eng.holders(table[i]) > 1]
        old_max = max(seq.lens[i] for i in layers)
        new_max = max(old_max, start + count)
        if new_max > old_max:
            # The engine grows its sequence to the longest layer, taking the blocks that needs,
            # and refuses (changing nothing) unless the copies below fit too.
            if not eng.grow(sid, old_max, new_max, len(shared)):
                raise OutOfBlocks(f"append of {count} positions to sequence {seq_id} layer {li}: the engine refused")
        elif shared and not eng.can_take(len(shared)):
            raise OutOfBlocks(f"append to sequence {seq_id} layer {li} needs {len(shared)} copy-on-write copies")
        for i in shared:
            old = table[i]
            new = eng.cow(sid, i)
            self._k[new] = self._k[old]
            self._v[new] = self._v[old]
        table = eng.table(sid)
        k16 = k_arr.astype(np.float16, copy=False)
        v16 = v_arr.astype(np.float16, copy=False)
        pos = start
        while pos < start + count:
            block, slot = table[pos // bs], pos % bs
            width = min(bs - slot, start + count - pos)
            off = pos - start
            self._k[block, li, :, slot : slot + width] = k16[:, off : off + width]
            self._v[block, li, :, slot : slot + width] = v16[:, off : off + width]
            pos += width
        seq.lens[li] = start + count
        shortest = min(seq.lens[i] for i in layers)
        if self.prefix_caching:
            eng.register(sid, shortest // bs * bs)
        if window is not None:
            # After the write and the registration: the engine lets go of the blocks before every layer's window.
            eng.release(sid, shortest)

    def gather(self, seq_id: int, layer: int) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        seq = self._seq(seq_id)
        li = self._layer(layer)
        length = seq.lens[li]
        eng, _, window = self._group(li)
        lo = 0 if window is None else max(0, length - window + 1)  # the window's first position
        bs = self.block_size
        table = eng.table(as_int(seq_id, "seq_id"))
        first, nb = lo // bs, -(-length // bs)
        blocks = np.array(table[first:nb], dtype=np.intp)
        if (blocks < 0).any():
            raise RuntimeError(f"the engine released a block of sequence {seq_id}'s window: table {table}")
        shape = (self.n_kv_heads, length - lo, self.d_head)
        out = []
        for pool in (self._k, self._v):
            part = pool[blocks, li]  # [nb - first, H, B, D]
            whole = part.transpose(1, 0, 2, 3).reshape(self.n_kv_heads, (nb - first) * bs, self.d_head)
            out.append(np.ascontiguousarray(whole[:, lo - first * bs : length - first * bs]).reshape(shape))
        return out[0], out[1]

    # -- inspection
    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        self._seq(seq_id)
        eng, _, _ = self._group(self._layer(layer))  # the table of the layer's group (one group: every layer's)
        return np.array(eng.table(as_int(seq_id, "seq_id")), dtype=np.int32)

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        seq = self._seq(seq_id)
        return seq.lens[self._layer(layer)]

    def stats(self) -> dict[str, int]:
        self._check_open()
        return self._engine.stats()

    def num_free_blocks(self) -> int:
        self._check_open()
        return self._engine.num_free()

    # -- internals
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the cache is closed")

    def _seq(self, seq_id: object) -> _Seq:
        self._check_open()
        return live(self._seqs, seq_id)

    def _layer(self, layer: object) -> int:
        return layer_index(layer, self.n_layers)

    def _group(self, layer: int) -> tuple[Any, range | tuple[int, ...], int | None]:
        """The layer's group: the backend that holds its table (with one group, the backend itself), the
        group's layers and its window. vllm_hybrid.py overrides it with one view of its backend a group."""
        return self._engine, range(self.n_layers), self.sliding_window
