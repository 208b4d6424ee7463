"""PagedKVCache: fixed-size float16 blocks, a block table per sequence, copy on write.

This module is the reference: every call's general path, written to be read top to bottom and
ported. What is there for speed alone lives in paged/fast.py, whose subclass of this class is
the public `paged.PagedKVCache`; each of its fast paths falls back to the methods here.

Memory layout (the implementation's choice; the contract only fixes what `gather`
returns): one K pool and one V pool, each `[L, H, N, B, D]` float16. A block id
indexes axis 2, so one layer of one head of a block is a contiguous `[B, D]` slab, and
what `gather` returns, `[H, len, D]`, is for each head the slabs of the sequence's blocks
one after another. Position p of a sequence lives in slot p % B of block table[p // B].

Prefix caching (opt-in, `prefix_caching=True`): a full block keeps its K and V under its
key after its last holder lets go, and a later prompt with the same prefix takes it; the
keys live in `PrefixIndex` (prefix.py), the cached blocks in `BlockAllocator`.

Sliding window (opt-in, `sliding_window=W`): a layer of n positions needs only its window,
positions n-W+1 .. n-1; at the end of every append, the blocks no layer's window reaches are let
go (the group's `release`) and their table entries become RELEASED (-1), positions staying absolute.

Groups (groups.py): the layers with one window form a group, of one kind (full attention, sliding
window); each group keeps its sequences' tables, its keys and its kind's rules (which positions
`gather` shows, what a sequence releases while it lives, which blocks of a hit it needs), over the one
pool. Without `layer_windows=(W_0, ..., W_{L-1})` (a hybrid model, None for full attention) there is
one group, of every layer. This class coordinates the groups and never asks a group's kind: an
append's one capacity check (an append writes one layer, so one group's table), the hit every group
can serve (`_hit`), and the order `free` lets go. The group of layer li is `_group(li)`; its table
of sequence s is `_group(li).tables[s]`, the first position it shows `.visible_from(length)`.

Copies: a write splits its positions into part of a block, whole blocks, part of a block
(`segments`); part of a block is one slice of each pool, every head at once; whole blocks are
one index assignment (`_write_blocks`). A gather takes the sequence's blocks in table order,
every head at once, and keeps the first seq_len positions. What each costs: docs/PERFORMANCE.md.
"""

from types import TracebackType
from typing import Any, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from . import page_tables
from .allocator import BlockAllocator
from .checks import as_chunk, as_int, as_layer_windows, as_sizes, as_tokens, as_window, layer_index, live, zeroed_pools
from .checks import as_page_size, as_seq_ids, as_span, batch
from .errors import OutOfBlocks
from .groups import Group, make_groups
from .prefix import Node

# One stretch of positions within a sequence: (index in its table of the first block, first
# slot `lo` in that block, offset into the chunk, width in positions). Either part of one block,
# when it starts or ends inside the block (`lo or width % B`), or whole blocks (lo == 0 and a
# width that is a multiple of B).
Segment = tuple[int, int, int, int]


def segments(start: int, count: int, block_size: int) -> list[Segment]:
    """Split positions start .. start+count-1 into at most three segments.

    Part of the first block, a run of whole blocks, part of the last block; each segment is
    (first block index, lo, offset into the chunk, width). This is the one place that splits
    positions over blocks.
    """
    out: list[Segment] = []
    pos, stop = start, start + count
    slot = start % block_size
    if slot:  # part of the first block: up to its end, or to the chunk's end if that comes first
        width = min(block_size - slot, count)
        out.append((pos // block_size, slot, 0, width))
        pos += width
    whole = (stop - pos) // block_size * block_size
    if whole:
        out.append((pos // block_size, 0, pos - start, whole))
        pos += whole
    if pos < stop:
        out.append((pos // block_size, 0, pos - start, stop - pos))
    return out


class _Seq:
    """A live sequence: its id `sid` (the key of its table in each group's `tables`), one length per
    layer and, with prefix caching, the token ids it has declared."""

    __slots__ = ("sid", "lens", "tokens")

    def __init__(self, sid: int, lens: list[int], tokens: list[int]) -> None:
        self.sid = sid
        self.lens = lens
        self.tokens = tokens


class PagedKVCache:
    """A paged float16 KV cache; see CONTRACT.md for the behaviour every call follows.

    Invariants (they hold between any two public calls; the suite checks their consequences
    through the public calls only, and the oracle `ModelKVCache` is their executable model):

    - The live sequences are `_seqs`' keys, and each group's `tables` and `nodes` have exactly those keys.
    - A block's reference count is the number of live tables that hold it, over every group (a
      table holds a block at most once, and a block is in the tables of one group), and a block has no holder (it is free, or with
      prefix caching cached) exactly when its count is 0. So `stats()["used"]` is the number
      of distinct blocks in live tables.
    - For every live sequence and group, `len(table) == ceil(max(lens of the group's layers) / B)`:
      a block is taken when a position first needs it and kept until the sequence is freed, or, in a
      sliding window group, until no window of its layers reaches it: then its entry is RELEASED. The RELEASED entries are
      the table's first ones, and no write or gather reaches them.
    - Position p < lens[layer] of a sequence is stored in slot p % B of block table[p // B] of the layer's group,
      in that layer of the pools; slots past a layer's length are never read.
    - A block with more than one holder is never written: `append` first gives the writer a
      private copy of it (copy on write).
    - A call that raises leaves all of the above as it was (`append` checks its arguments,
      then capacity, before it takes a block or writes a position).
    - `_layers[l]` is `(_k[l], _v[l])`: views of the pools, never copies.
    - With prefix caching: a block is registered (has a key in its group's `index`) only once every
      layer of its group in a sequence filled it, and then is never written again; a registered block with no
      holder is cached, and a cached block has no holder. `group.nodes[s][i]` is the prefix node of
      full block i of the group's table of s (`len(group.nodes[s])` is the group's layers' min(lens) // B); an append never
      runs past `seq.tokens`. Off, `_prefix` is False, nothing registers (every index stays empty), and nothing of it runs.
    - After `close()`, `_closed` is true and the pools are gone; every call but `close()`
      raises ValueError.

    Who touches what: only `append` writes the pools (through `_copy_block` and `_write`; in
    fast.py, also its fast path for a chunk within a block the sequence holds alone);
    reference counts, the free pool and the cached blocks change only inside `BlockAllocator`,
    through `allocate`, `incref`, `acquire`, `unshare` and `decref` (`shared` and `holders` only
    read them); keys change only inside `PrefixIndex`, through `register` and `drop` (called on
    eviction); table entries change only in `append` (through the layer's group's `tables`) and in
    the groups' own methods; `_seqs` and its `_Seq` objects are this class's own; `block_table` and
    `gather` return new arrays, never views.
    """

    _closed = False  # set by close(); a class default, so __init__ has nothing to undo on failure
    allocator: type[BlockAllocator] = BlockAllocator  # the free-pool policy (a port with another order overrides it)

    def __init__(
        self,
        num_blocks: int,
        block_size: int,
        n_layers: int,
        n_kv_heads: int,
        d_head: int,
        *,
        prefix_caching: bool = False,
        sliding_window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        sizes = as_sizes((num_blocks, block_size, n_layers, n_kv_heads, d_head), prefix_caching)
        self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head = sizes
        window = as_window(sliding_window, "sliding_window")
        given = as_layer_windows(layer_windows, window, self.n_layers)
        shape = (self.n_layers, self.n_kv_heads, self.num_blocks, self.block_size, self.d_head)
        self._k, self._v = zeroed_pools(shape)  # MemoryError when the machine will not give them
        windows = [window] * self.n_layers if given is None else given  # each layer's (sliding_window: every layer's)
        self._prefix = prefix_caching
        self._alloc = self.allocator(self.num_blocks, self._drop)  # called on an eviction: prefix caching only
        self._groups = make_groups(windows, self.block_size, self._alloc)
        of_layer = {li: group for group in self._groups for li in group.layers}
        self._layer_groups = [of_layer[li] for li in range(self.n_layers)]  # layer -> its group
        # Each layer's `[H, N, B, D]` view of the pools, one list item per layer: a list lookup
        # instead of a new NumPy view on every append and gather.
        self._layers = list(zip(self._k, self._v))
        self._seqs: dict[int, _Seq] = {}

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Release the pool. A second close does nothing; any other call afterwards raises ValueError."""
        if self._closed:
            return
        self._closed = True
        del self._k, self._v, self._layers
        self._seqs.clear()
        for group in self._groups:
            group.tables.clear()
            group.nodes.clear()

    def __enter__(self) -> "PagedKVCache":
        self._check_open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- sequences ---------------------------------------------------------------------------

    def add_seq(self, seq_id: int, tokens: Iterable[int] = ()) -> int:
        """Start a new sequence whose prompt has these token ids; return the positions served from the cache.

        With prefix caching, the longest run of the prompt's full blocks (ending before its last token)
        that every group can serve becomes each group's table, each block gaining a holder, and every
        layer's length is that run's positions; each group's kind says which blocks of the run it needs
        registered (full attention every one, a sliding window the run's last blocks, those its window
        needs, and the entries before them are RELEASED; `_hit`). Off, the tokens are checked and
        nothing is served.
        """
        self._check_open()
        sid = as_int(seq_id, "seq_id")
        if sid in self._seqs:
            raise ValueError(f"sequence {sid} is already live")
        ids = as_tokens(tokens)
        if not self._prefix:
            for group in self._groups:
                group.add(sid)
            self._seqs[sid] = _Seq(sid, [0] * self.n_layers, [])
            return 0
        hits = self._hit(ids)
        for group, (run, skipped) in zip(self._groups, hits):
            group.add(sid, run, skipped)
        served = len(hits[0][0]) * self.block_size
        self._seqs[sid] = _Seq(sid, [served] * self.n_layers, ids)
        return served

    def extend(self, seq_id: int, tokens: Iterable[int]) -> None:
        """Declare the token ids of the sequence's next positions (a decode step declares its one token)."""
        seq = self._seq(seq_id)
        ids = as_tokens(tokens)
        if self._prefix:
            seq.tokens += ids

    def fork(self, parent: int, child: int) -> None:
        """Give `child` the parent's tables and lengths; every block gains a reference, none is allocated."""
        src = self._seq(parent)
        cid = as_int(child, "child")
        if cid in self._seqs:
            raise ValueError(f"sequence {cid} is already live")
        for group in self._groups:
            group.fork(src.sid, cid)
        self._seqs[cid] = _Seq(cid, src.lens.copy(), src.tokens.copy())

    def free(self, seq_id: int) -> None:
        """Drop the sequence, letting go of each group's table in turn, group 0 first, each from its last
        entry to its first: each block whose last holder it was returns to the pool, or, when it has a
        key, becomes cached."""
        seq = self._seq(seq_id)
        for group in self._groups:
            group.free(seq.sid)
        del self._seqs[as_int(seq_id, "seq_id")]

    # -- data ---------------------------------------------------------------------------------

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        """Store k, v `[H, T, D]` (rounded to float16) at positions seq_len .. seq_len+T-1 of `layer`.

        Checks arguments, then capacity (new blocks plus copy-on-write copies), before changing
        anything: it either succeeds whole or raises with the cache as it was.
        """
        seq, li = self._seq_layer(seq_id, layer)
        k_arr, v_arr = as_chunk(k, v, self.n_kv_heads, self.d_head)
        start = seq.lens[li]
        tokens = k_arr.shape[1]
        if self._prefix and start + tokens > len(seq.tokens):
            raise ValueError(
                f"positions {start} .. {start + tokens - 1} of layer {li} need declared token ids; "
                f"sequence {seq_id} has declared {len(seq.tokens)} (add_seq's tokens, then extend)"
            )
        group = self._group(li)
        table = group.tables[seq.sid]  # the layer's group takes the blocks: its table
        bs = self.block_size
        first, last = start // bs, (start + tokens - 1) // bs
        alloc = self._alloc
        shared = alloc.shared(table, first, last + 1)  # blocks to copy before writing (copy on write)
        needed = len(shared) + max(last + 1 - len(table), 0)  # those copies, then new blocks past the table's end
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
        if self._prefix:
            group.register(seq.sid, seq.tokens, seq.lens)
        group.release(seq.sid, seq.lens)

    def gather(self, seq_id: int, layer: int) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """New C-contiguous float16 arrays `[H, n, D]` of the layer's K and V: every position, or with a
        sliding window W, the window, positions max(0, n-W+1) .. n-1 (`n` the layer's length)."""
        seq, li = self._seq_layer(seq_id, layer)
        length = seq.lens[li]
        group = self._group(li)
        start = group.visible_from(length)
        bs = self.block_size
        blocks = group.tables[seq.sid][start // bs : -(-length // bs)]  # the blocks of positions start .. length-1
        return self._gather_blocks(li, blocks, start % bs, length - start)

    # -- inspection -------------------------------------------------------------------------

    def block_table(self, seq_id: int, layer: int = 0) -> NDArray[np.int32]:
        """A new int32 array of the block ids of the table of the layer's group, in position order."""
        seq, li = self._seq_layer(seq_id, layer)
        return np.array(self._group(li).tables[seq.sid], dtype=np.int32)

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        """The number of positions `layer` of the sequence holds."""
        seq, li = self._seq_layer(seq_id, layer)
        return seq.lens[li]

    def stats(self) -> dict[str, int]:
        """Block counts, free + used + cached == num_blocks: free (no holder, no key), used (a holder),
        cached (no holder, a key; always 0 without prefix caching), and evictions since the start."""
        self._check_open()
        alloc = self._alloc
        takeable, cached = alloc.num_free, alloc.num_cached
        return {"free": takeable - cached, "used": self.num_blocks - takeable, "cached": cached, "evictions": alloc.evictions}

    def num_free_blocks(self) -> int:
        """The blocks an append can take: free and cached (stats()["free"] without prefix caching)."""
        self._check_open()
        return self._alloc.num_free

    # -- internals --------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the cache is closed")

    def _seq(self, seq_id: object) -> _Seq:
        self._check_open()
        return live(self._seqs, seq_id)

    def _layer(self, layer: object) -> int:
        return layer_index(layer, self.n_layers)

    def _seq_layer(self, seq_id: object, layer: object) -> tuple[_Seq, int]:
        """The live sequence and the layer index a call names: the id's errors first, then the layer's."""
        return self._seq(seq_id), self._layer(layer)

    def _group(self, layer: int) -> Group:
        """The group of `layer` (an index in range): its tables and its kind's rules."""
        return self._layer_groups[layer]

    def _hit(self, ids: list[int]) -> list[tuple[list[Node], int]]:
        """Each group's hit (its nodes, how many first ones it skips) for the largest k, at most the prompt's full
        blocks before its last token, that every group can serve: vLLM's fixed point. Each group gives its
        longest hit of at most k blocks; k becomes the shortest of them, until every group serves k."""
        k = (len(ids) - 1) // self.block_size
        while True:
            hits = [group.hit(ids, k) for group in self._groups]
            common = min(len(run) for run, _ in hits)
            if common == k:
                return hits
            k = common

    def _drop(self, block: int) -> None:
        """An evicted block's key goes, from the index of the group it was registered in."""
        for group in self._groups:
            if group.index.is_registered(block):
                group.index.drop(block)
                return

    def _copy_block(self, block: int) -> int:
        """Copy on write: a private copy of a shared block (every layer) for the writer."""
        copy = self._alloc.allocate()
        self._k[:, :, copy] = self._k[:, :, block]
        self._v[:, :, copy] = self._v[:, :, block]
        self._alloc.unshare(block)
        return copy

    def _write(self, table: list[int], layer: int, start: int, k: NDArray[Any], v: NDArray[Any]) -> None:
        """Copy k, v `[H, T, D]` to positions start .. start+T-1 of `layer` (rounding to float16)."""
        k_pool, v_pool = self._layers[layer]
        bs = self.block_size
        for first, lo, off, width in segments(start, k.shape[1], bs):
            k_src, v_src = k[:, off : off + width], v[:, off : off + width]
            if lo or width % bs:  # part of one block (the first or the last): one slice copy, every head
                block = table[first]
                k_pool[:, block, lo : lo + width] = k_src
                v_pool[:, block, lo : lo + width] = v_src
            else:  # whole blocks
                blocks = table[first : first + width // bs]
                self._write_blocks(k_pool, blocks, k_src)
                self._write_blocks(v_pool, blocks, v_src)

    def _write_blocks(self, pool: NDArray[np.float16], blocks: list[int], src: NDArray[Any]) -> None:
        """Copy src `[H, len(blocks) * B, D]` into the `[B, D]` slabs of `blocks`, in order, of one layer's
        pool `[H, N, B, D]`: one index assignment, every head at once."""
        pool[:, blocks] = src.reshape(self.n_kv_heads, len(blocks), self.block_size, self.d_head)

    def _gather_blocks(
        self, layer: int, blocks: list[int], skip: int, length: int
    ) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """New C-contiguous arrays `[H, length, D]`: `length` positions of the slabs of `blocks`, in order,
        after the first `skip` (< B), of the layer's K and V pools (an index of the pools copies; so does
        making it contiguous)."""
        k_pool, v_pool = self._layers[layer]
        every = (self.n_kv_heads, len(blocks) * self.block_size, self.d_head)  # every slot of the blocks
        k_out = k_pool[:, blocks].reshape(every)[:, skip : skip + length]
        v_out = v_pool[:, blocks].reshape(every)[:, skip : skip + length]
        return np.ascontiguousarray(k_out), np.ascontiguousarray(v_out)

    # -- page tables for kernels (CONTRACT.md, "Page tables for kernels"; the arithmetic: page_tables.py) ----

    def page_table(
        self, seq_ids: Iterable[int], layer: int, page_size: int | None = None
    ) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.int32]]:
        """What a paged attention kernel reads for a batch and one layer: new int32 arrays (indptr, indices,
        last_page_len) over kernel pages of `page_size` P (default B), from each sequence's layer's group's
        table, the pages of the positions `gather` shows."""
        self._check_open()
        seqs = batch(self._seqs, as_seq_ids(seq_ids))
        li = self._layer(layer)
        size = as_page_size(page_size, self.block_size)
        group = self._group(li)
        lens = [seq.lens[li] for seq in seqs]
        starts = [group.visible_from(n) for n in lens]
        return page_tables.page_table([group.tables[seq.sid] for seq in seqs], starts, lens, self.block_size, size)

    def slot_mapping(self, seq_id: int, layer: int, start: int, count: int) -> NDArray[np.int64]:
        """The int64 flat slots (block * B + slot) of the layer's positions start .. start+count-1, where an
        append wrote them; -1 for a position whose entry a window released."""
        seq, li = self._seq_layer(seq_id, layer)
        first, n = as_span(start, count, seq.lens[li])
        return page_tables.slot_mapping(self._group(li).tables[seq.sid], first, n, self.block_size)

    def kv_pages(self, layer: int, page_size: int | None = None) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """The layer's K and V pools as kernel pages in HND, each `[N * B // P, H, P, D]`: views, no copy,
        the memory page_table's indices address."""
        self._check_open()
        li = self._layer(layer)
        size = as_page_size(page_size, self.block_size)
        k_pool, v_pool = self._layers[li]
        return page_tables.pool_pages(k_pool, size), page_tables.pool_pages(v_pool, size)
