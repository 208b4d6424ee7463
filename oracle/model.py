"""The dictionary-of-lists model of the whole PagedKVCache contract.

Obviously right because it is plain: each sequence keeps, per layer, the list of
tokens appended to it (each a float16 [H, D] pair) and a list of block ids. There
are no reference counts and no block storage: a block's holders are the live
tables that list it, the free blocks are those no table lists, and a copy on write
is just a new id in the writer's list. `gather` stacks the token lists, so it is
right whatever the blocks hold. Never imports `paged`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class OutOfBlocks(RuntimeError):
    """The model's own OutOfBlocks; tests match it to the implementation's."""


def _integer(value: Any, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _real_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x)
    is_real = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if arr.dtype == np.bool_ or not is_real:
        raise TypeError(f"{what} has dtype {arr.dtype}, not a real number")
    return arr


class ModelKVCache:
    """What every call of CONTRACT.md returns and raises, written for clarity, not speed."""

    def __init__(self, num_blocks: int, block_size: int, n_layers: int, n_kv_heads: int, d_head: int) -> None:
        sizes = [num_blocks, block_size, n_layers, n_kv_heads, d_head]
        names = ["num_blocks", "block_size", "n_layers", "n_kv_heads", "d_head"]
        for name, size in zip(names, sizes):
            if _integer(size, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head = (int(s) for s in sizes)
        self.tokens: dict[int, list[list[tuple[np.ndarray, np.ndarray]]]] = {}  # seq -> layer -> tokens
        self.tables: dict[int, list[int]] = {}  # seq -> block ids in position order
        self.closed = False

    # -- derived facts ------------------------------------------------------------------

    def holders(self, block: int) -> int:
        return sum(table.count(block) for table in self.tables.values())

    def free_blocks(self) -> list[int]:
        held = {b for table in self.tables.values() for b in table}
        return [b for b in range(self.num_blocks) if b not in held]

    # -- checks ---------------------------------------------------------------------------

    def _open(self) -> None:
        if self.closed:
            raise ValueError("closed")

    def _live(self, seq_id: Any) -> int:
        self._open()
        sid = _integer(seq_id, "seq_id")
        if sid not in self.tables:
            raise KeyError(sid)
        return sid

    def _new(self, seq_id: Any) -> int:
        sid = _integer(seq_id, "seq_id")
        if sid in self.tables:
            raise ValueError(f"sequence {sid} is live")
        return sid

    def _layer(self, layer: Any) -> int:
        li = _integer(layer, "layer")
        if li < 0 or li >= self.n_layers:
            raise ValueError(f"layer {li} out of range")
        return li

    # -- the contract ----------------------------------------------------------------------

    def add_seq(self, seq_id: int) -> None:
        self._open()
        sid = self._new(seq_id)
        self.tokens[sid] = [[] for _ in range(self.n_layers)]
        self.tables[sid] = []

    def fork(self, parent: int, child: int) -> None:
        pid = self._live(parent)
        cid = self._new(child)
        self.tokens[cid] = [list(layer) for layer in self.tokens[pid]]
        self.tables[cid] = list(self.tables[pid])

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        sid = self._live(seq_id)
        li = self._layer(layer)
        k = _real_array(k, "k")
        v = _real_array(v, "v")
        if k.ndim != 3 or v.ndim != 3 or k.shape != v.shape:
            raise ValueError("k and v must be 3-D arrays of one shape")
        if k.shape[0] != self.n_kv_heads or k.shape[2] != self.d_head or k.shape[1] == 0:
            raise ValueError(f"bad chunk shape {k.shape}")
        table = self.tables[sid]
        start = len(self.tokens[sid][li])
        end = start + k.shape[1]  # one past the last position written
        touched = range(start // self.block_size, (end - 1) // self.block_size + 1)
        needs_copy = {i for i in touched if i < len(table) and self.holders(table[i]) > 1}
        needs_new = {i for i in touched if i >= len(table)}
        free = self.free_blocks()  # lowest first; each block taken is the lowest still free
        if len(needs_copy) + len(needs_new) > len(free):
            raise OutOfBlocks(f"needs {len(needs_copy) + len(needs_new)} blocks")
        taken = iter(free)
        for i in touched:
            if i in needs_copy:
                table[i] = next(taken)
            elif i in needs_new:
                table.append(next(taken))
        for t in range(k.shape[1]):
            self.tokens[sid][li].append((k[:, t, :].astype(np.float16), v[:, t, :].astype(np.float16)))
        assert len(table) == math.ceil(max(len(t) for t in self.tokens[sid]) / self.block_size)

    def gather(self, seq_id: int, layer: int) -> tuple[np.ndarray, np.ndarray]:
        sid = self._live(seq_id)
        toks = self.tokens[sid][self._layer(layer)]
        empty = np.zeros((self.n_kv_heads, 0, self.d_head), dtype=np.float16)
        if not toks:
            return empty, empty.copy()
        k = np.stack([kt for kt, _ in toks], axis=1)
        v = np.stack([vt for _, vt in toks], axis=1)
        return k, v

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        sid = self._live(seq_id)
        return len(self.tokens[sid][self._layer(layer)])

    def block_table(self, seq_id: int) -> np.ndarray:
        return np.array(self.tables[self._live(seq_id)], dtype=np.int32)

    def free(self, seq_id: int) -> None:
        sid = self._live(seq_id)
        del self.tables[sid], self.tokens[sid]

    def stats(self) -> dict[str, int]:
        self._open()
        free = len(self.free_blocks())
        return {"free": free, "used": self.num_blocks - free, "cached": 0, "evictions": 0}

    def num_free_blocks(self) -> int:
        return self.stats()["free"]

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> ModelKVCache:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
