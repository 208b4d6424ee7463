"""PagedKVCache: fixed-size float16 blocks, a block table per sequence, copy on write.

Memory layout (the implementation's choice; the contract only fixes what `gather`
returns): one K pool and one V pool, each `[L, H, N, B, D]` float16. A block id
indexes axis 2, so one layer of one head of a block is a contiguous `[B, D]` slab,
and a run of whole blocks of one layer gathers into `[H, len, D]` with one
`np.take`. Position p of a sequence lives in slot p % B of block table[p // B].
"""

from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .allocator import BlockAllocator
from .checks import as_chunk, as_int, as_size
from .errors import OutOfBlocks

# One contiguous stretch of positions within a sequence: block indices [first, first + n_blocks)
# of its table, slots [slot_lo, slot_hi) of each of those blocks, and where it starts in the chunk.
Segment = tuple[int, int, int, int, int]


def segments(start: int, count: int, block_size: int) -> list[Segment]:
    """Split positions start .. start+count-1 into at most three block-aligned segments.

    A partial head block, a run of whole blocks, a partial tail block; each segment is
    (first block index, number of blocks, slot_lo, slot_hi, offset into the chunk).
    This is the one place that maps positions to blocks.
    """
    out: list[Segment] = []
    pos, stop = start, start + count
    slot = pos % block_size
    if slot:
        n = min(block_size - slot, count)
        out.append((pos // block_size, 1, slot, slot + n, 0))
        pos += n
        if pos == stop:  # within one block, as every decode step
            return out
    whole = (stop - pos) // block_size
    if whole:
        out.append((pos // block_size, whole, 0, block_size, pos - start))
        pos += whole * block_size
    if pos < stop:
        out.append((pos // block_size, 1, 0, stop - pos, pos - start))
    return out


def consecutive(table: list[int], first: int, n: int) -> bool:
    """Whether blocks table[first : first + n] have the ids b, b+1, ..., b+n-1 (always so for n = 1).

    Their positions are then one range of rows of the pool's row view, copied by one plain
    slice: a fresh pool hands blocks out in order, so a long prefill is such a run.
    """
    b = table[first]
    return n == 1 or table[first : first + n] == list(range(b, b + n))


class _Seq:
    """A live sequence: its block table and one length per layer."""

    __slots__ = ("table", "lens")

    def __init__(self, table: list[int], lens: list[int]) -> None:
        self.table = table
        self.lens = lens


class PagedKVCache:
    """A paged float16 KV cache; see CONTRACT.md for the behaviour every call follows."""

    def __init__(self, num_blocks: int, block_size: int, n_layers: int, n_kv_heads: int, d_head: int) -> None:
        self._closed = True  # until the pool exists, so close() and __del__ are safe on a failed init
        self.num_blocks = as_size(num_blocks, "num_blocks")
        self.block_size = as_size(block_size, "block_size")
        self.n_layers = as_size(n_layers, "n_layers")
        self.n_kv_heads = as_size(n_kv_heads, "n_kv_heads")
        self.d_head = as_size(d_head, "d_head")
        shape = (self.n_layers, self.n_kv_heads, self.num_blocks, self.block_size, self.d_head)
        self._k: NDArray[np.float16] = np.zeros(shape, dtype=np.float16)
        self._v: NDArray[np.float16] = np.zeros(shape, dtype=np.float16)
        # The same memory per layer as rows `[H, N * B, D]`, row = block * B + slot: positions in
        # blocks with consecutive ids are consecutive rows, which one slice copies at memcpy speed.
        rows = (self.n_kv_heads, self.num_blocks * self.block_size, self.d_head)
        self._k_rows = [layer.reshape(rows) for layer in self._k]
        self._v_rows = [layer.reshape(rows) for layer in self._v]
        self._alloc = BlockAllocator(self.num_blocks)
        self._seqs: dict[int, _Seq] = {}
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        # pragma: no mutate block (__del__ runs close() from the GC, where mutmut's trampoline crashes)
        """Release the pool. A second close does nothing; any other call afterwards raises ValueError."""
        if self._closed:
            return
        self._closed = True
        del self._k, self._v, self._k_rows, self._v_rows
        self._seqs.clear()

    def __enter__(self) -> "PagedKVCache":
        self._check_open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # -- sequences ---------------------------------------------------------------------------

    def add_seq(self, seq_id: int) -> None:
        """Start a new, empty sequence."""
        self._check_open()
        sid = as_int(seq_id, "seq_id")
        if sid in self._seqs:
            raise ValueError(f"sequence {sid} is already live")
        self._seqs[sid] = _Seq([], [0] * self.n_layers)

    def fork(self, parent: int, child: int) -> None:
        """Give `child` the parent's table and lengths; every block gains a reference, none is allocated."""
        src = self._seq(parent)
        cid = as_int(child, "child")
        if cid in self._seqs:
            raise ValueError(f"sequence {cid} is already live")
        for block in src.table:
            self._alloc.incref(block)
        self._seqs[cid] = _Seq(src.table.copy(), src.lens.copy())

    def free(self, seq_id: int) -> None:
        """Drop the sequence; each block whose last holder it was returns to the pool."""
        seq = self._seq(seq_id)
        for block in seq.table:
            self._alloc.decref(block)
        del self._seqs[as_int(seq_id, "seq_id")]

    # -- data ---------------------------------------------------------------------------------

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        """Store k, v `[H, T, D]` (rounded to float16) at positions seq_len .. seq_len+T-1 of `layer`.

        Checks arguments, then capacity (new blocks plus copy-on-write copies), before changing
        anything: it either succeeds whole or raises with the cache as it was.
        """
        seq = self._seq(seq_id)
        li = self._layer(layer)
        k_arr, v_arr = as_chunk(k, v, self.n_kv_heads, self.d_head)
        start = seq.lens[li]
        tokens = k_arr.shape[1]
        table = seq.table
        bs = self.block_size
        first, last = start // bs, (start + tokens - 1) // bs
        alloc = self._alloc
        shared = [i for i in range(first, min(last + 1, len(table))) if alloc.is_shared(table[i])]
        needed = len(shared) + max(0, last + 1 - len(table))
        if needed > alloc.num_free:
            raise OutOfBlocks(
                f"append of {tokens} positions to sequence {seq_id} layer {li} needs {needed} "
                f"blocks, {alloc.num_free} free"
            )
        for i in shared:
            table[i] = self._copy_block(table[i])
        while len(table) <= last:
            table.append(alloc.allocate())
        self._write(table, li, start, k_arr, v_arr)
        seq.lens[li] = start + tokens

    def gather(self, seq_id: int, layer: int) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """New C-contiguous float16 arrays `[H, seq_len, D]` of the layer's K and V."""
        seq = self._seq(seq_id)
        li = self._layer(layer)
        length = seq.lens[li]
        shape = (self.n_kv_heads, length, self.d_head)
        k_out = np.empty(shape, dtype=np.float16)
        v_out = np.empty(shape, dtype=np.float16)
        k_pool, v_pool = self._k[li], self._v[li]
        k_rows, v_rows = self._k_rows[li], self._v_rows[li]
        for first, n, lo, hi, off in segments(0, length, self.block_size):
            width = n * (hi - lo)
            if n == 1:
                block = seq.table[first]
                k_out[:, off : off + width] = k_pool[:, block, lo:hi]
                v_out[:, off : off + width] = v_pool[:, block, lo:hi]
            elif consecutive(seq.table, first, n):
                row = seq.table[first] * self.block_size
                k_out[:, off : off + width] = k_rows[:, row : row + width]
                v_out[:, off : off + width] = v_rows[:, row : row + width]
            else:
                blocks = np.array(seq.table[first : first + n], dtype=np.intp)
                quad = (self.n_kv_heads, n, hi - lo, self.d_head)
                # reshape splits the token axis of a slice: always a view, so take writes into k_out.
                np.take(k_pool, blocks, axis=1, out=k_out[:, off : off + width].reshape(quad), mode="clip")
                np.take(v_pool, blocks, axis=1, out=v_out[:, off : off + width].reshape(quad), mode="clip")
        return k_out, v_out

    # -- inspection -------------------------------------------------------------------------

    def block_table(self, seq_id: int) -> NDArray[np.int32]:
        """A new int32 array of the sequence's block ids, in position order."""
        return np.array(self._seq(seq_id).table, dtype=np.int32)

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        """The number of positions `layer` of the sequence holds."""
        seq = self._seq(seq_id)
        return seq.lens[self._layer(layer)]

    def stats(self) -> dict[str, int]:
        """Block counts: free + used + cached == num_blocks (no prefix cache, so cached = evictions = 0)."""
        self._check_open()
        free = self._alloc.num_free
        return {"free": free, "used": self.num_blocks - free, "cached": 0, "evictions": 0}

    def num_free_blocks(self) -> int:
        """stats()["free"]."""
        self._check_open()
        return self._alloc.num_free

    # -- internals --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the cache is closed")

    def _seq(self, seq_id: object) -> _Seq:
        self._check_open()
        sid = seq_id if type(seq_id) is int else as_int(seq_id, "seq_id")  # skip a call on every append
        try:
            return self._seqs[sid]
        except KeyError:
            raise KeyError(f"sequence {sid} is not live") from None

    def _layer(self, layer: object) -> int:
        li = layer if type(layer) is int else as_int(layer, "layer")
        if not 0 <= li < self.n_layers:
            raise ValueError(f"layer {li} is outside 0 .. {self.n_layers - 1}")
        return li

    def _copy_block(self, block: int) -> int:
        """Copy on write: a private copy of a shared block (every layer) for the writer."""
        copy = self._alloc.allocate()
        self._k[:, :, copy] = self._k[:, :, block]
        self._v[:, :, copy] = self._v[:, :, block]
        self._alloc.decref(block)
        return copy

    def _write(self, table: list[int], layer: int, start: int, k: NDArray[Any], v: NDArray[Any]) -> None:
        """Copy k, v `[H, T, D]` to positions start .. start+T-1 of `layer`.

        Positions in one block, or in whole blocks with consecutive ids, are one range of rows:
        one plain slice copy. Other runs of whole blocks take one fancy-index copy.
        """
        bs, tokens = self.block_size, k.shape[1]
        for first, n, lo, hi, off in segments(start, tokens, bs):
            width = n * (hi - lo)
            # A decode step's token is the whole chunk: copy from k, v without slicing them.
            k_src, v_src = (k, v) if width == tokens else (k[:, off : off + width], v[:, off : off + width])
            if consecutive(table, first, n):
                row = table[first] * bs + lo
                self._k_rows[layer][:, row : row + width] = k_src
                self._v_rows[layer][:, row : row + width] = v_src
            else:
                blocks = np.array(table[first : first + n], dtype=np.intp)
                quad = (self.n_kv_heads, n, hi - lo, self.d_head)
                self._k[layer][:, blocks] = k_src.reshape(quad)
                self._v[layer][:, blocks] = v_src.reshape(quad)
