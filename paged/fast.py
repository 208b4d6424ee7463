"""What is there for speed alone: `PagedKVCache`, the reference of cache.py with one fast path per hot call.

A port needs none of this: cache.py is the behaviour. Each fast path takes a subset of the calls the
general path takes, does what the general path would do with them, and hands every other call to
the general path unchanged (meta_tests/paged/test_fast_paths.py checks both, and that each fast path takes
exactly the calls it is meant to). The costs they cut: docs/PERFORMANCE.md.

1. `_append_in_block`, a decode step's append: a chunk of float16 ndarrays that stays within a block
   the sequence already holds alone, with prefix caching off. It skips the calls to the checks (an
   engine's arguments pass them as they are), the copy-on-write scan, the capacity check and
   `segments`: one slice copy of each pool.
2. `_gather_blocks`, every gather's copy: full blocks with consecutive ids are one slice of each
   pool, every head at once (a prefill into a fresh pool gives a sequence such a table); other full
   blocks are `take`s straight into the output (`take_heads`); a part-full last block is one slice. The general path's index copies everything twice.
3. `_write_blocks`, whole blocks of a write (a prefill): consecutive ids are one slice of each pool;
   other ids one index assignment per head (1.15 to 1.5x faster than one for every head at once).
4. `_seq_layer`, the id and layer of every gather, seq_len and general append: an int id of a live
   sequence and an int layer in range, taken as they are.
"""

from typing import Any

import numpy as np
from numpy import ndarray
from numpy.typing import NDArray

from . import cache

FLOAT16 = np.dtype(np.float16)  # the pools' dtype; NumPy keeps one object for it, so `is` compares it


def take_heads(pool: NDArray[np.float16], blocks: NDArray[np.intp], out: NDArray[np.float16]) -> None:
    """Copy the `[B, D]` slabs `blocks` of a layer's pool `[H, N, B, D]`, in order, into out `[H, n * B, D]`.

    `take` copies straight into a contiguous `out` only with mode "clip" (the ids are live blocks,
    always in range); with "raise", or into a strided `out`, it fills a temporary and copies that,
    about 2x the time. So a contiguous `out` (whole blocks only) is one `take`, every head at once;
    a strided one (a part-full last block follows) one `take` per head, whose rows are contiguous.
    """
    slabs = (len(blocks), pool.shape[2], pool.shape[3])
    if out.flags.c_contiguous:
        calls = [(pool, out.reshape(len(pool), *slabs), 1)]
    else:
        calls = [(pool[h], out[h].reshape(slabs), 0) for h in range(len(pool))]
    for source, target, axis in calls:
        source.take(blocks, axis, target, "clip")


def is_run(blocks: list[int]) -> bool:
    """Whether `blocks` is one run of consecutive ids b, b+1, ... (an empty list is not). The ends are
    compared first: most tables that are not a run fail there, without a list of the range."""
    if not blocks or blocks[-1] - blocks[0] != len(blocks) - 1:
        return False
    return blocks == list(range(blocks[0], blocks[0] + len(blocks)))


class PagedKVCache(cache.PagedKVCache):
    """cache.PagedKVCache with the fast paths of this module; the same behaviour, call for call."""

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        if not self._append_in_block(seq_id, layer, k, v):
            super().append(seq_id, layer, k, v)

    def _seq_layer(self, seq_id: object, layer: object) -> tuple[cache._Seq, int]:
        """FAST PATH 4: an int id of a live sequence and an int layer in range, taken without a call to
        the checks (every gather and seq_len, and every append the decode-step path leaves)."""
        seq = self._seqs.get(seq_id) if type(seq_id) is int else None  # closed: no sequence is live
        if seq is None or type(layer) is not int or not 0 <= layer < self.n_layers:
            return super()._seq_layer(seq_id, layer)
        return seq, layer

    def _append_in_block(self, seq_id: object, layer: object, k: Any, v: Any) -> bool:
        """FAST PATH 1. Write a chunk that stays within a block the sequence holds alone and return True;
        return False, having changed nothing, for every other call (the general path then takes it)."""
        seq = self._seqs.get(seq_id) if type(seq_id) is int else None  # closed: no sequence is live
        if seq is None or type(layer) is not int or not 0 <= layer < self.n_layers or self._prefix:
            return False
        if not (type(k) is ndarray is type(v) and k.dtype is FLOAT16 is v.dtype):
            return False
        shape = k.shape
        if not (shape == v.shape and len(shape) == 3 and shape[0] == self.n_kv_heads and shape[2] == self.d_head and shape[1]):
            return False
        start = seq.lens[layer]
        first, lo = divmod(start, self.block_size)
        stop = lo + shape[1]
        group = self._layer_groups[layer]
        table = group.tables[seq.sid]
        if stop > self.block_size or first >= len(table) or self._alloc.holders(table[first]) > 1:
            return False  # a new block, more than one block, or copy on write
        k_pool, v_pool = self._layers[layer]
        k_pool[:, table[first], lo:stop] = k
        v_pool[:, table[first], lo:stop] = v
        seq.lens[layer] = start + shape[1]
        group.release(seq.sid, seq.lens)
        return True

    def _gather_blocks(
        self, layer: int, blocks: list[int], skip: int, length: int
    ) -> tuple[NDArray[np.float16], NDArray[np.float16]]:
        """FAST PATH 2: the general path's copy, each output filled once (see the module's docstring), for
        positions from the start of the first block (a sliding window's gather may start inside it)."""
        if skip:
            return super()._gather_blocks(layer, blocks, skip, length)
        bs = self.block_size
        whole = length // bs  # the full blocks; a part-full last block follows when whole < len(blocks)
        ids = None if is_run(blocks[:whole]) else np.array(blocks[:whole], dtype=np.intp)
        shape = (self.n_kv_heads, length, self.d_head)
        outs = (np.empty(shape, FLOAT16), np.empty(shape, FLOAT16))
        for pool, out in zip(self._layers[layer], outs):
            if ids is None:  # consecutive ids: one slice of the pool, every head
                out[:, : whole * bs] = pool[:, blocks[0] : blocks[0] + whole].reshape(self.n_kv_heads, whole * bs, self.d_head)
            else:
                take_heads(pool, ids, out[:, : whole * bs])
            if whole < len(blocks):  # the part-full last block: one slice, every head
                out[:, whole * bs :] = pool[:, blocks[whole], : length - whole * bs]
        return outs

    def _write_blocks(self, pool: NDArray[np.float16], blocks: list[int], src: NDArray[Any]) -> None:
        """FAST PATH 3: consecutive ids are one slice of the pool, other ids one index assignment per head."""
        heads = src.reshape(self.n_kv_heads, len(blocks), self.block_size, self.d_head)
        if is_run(blocks):
            pool[:, blocks[0] : blocks[0] + len(blocks)] = heads
        else:  # one index assignment per head: each index then picks one contiguous [B, D] slab
            ids = np.array(blocks)
            for h in range(self.n_kv_heads):
                pool[h][ids] = heads[h]
