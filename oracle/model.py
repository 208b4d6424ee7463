"""The dictionary-of-lists model of the whole PagedKVCache contract.

Obviously right because it is plain: each sequence keeps, per layer, the list of
tokens appended to it (each a float16 [H, D] pair) and a list of block ids. There
are no reference counts and no block storage: a block's holders are the live
tables that list it, the free blocks are those no table lists, and a copy on write
is just a new id in the writer's list. `gather` stacks the token lists, so it is
right whatever the blocks hold. Never imports `paged`.

Prefix caching (CONTRACT.md "Prefix caching (opt-in)") adds three plain things: the
token ids each sequence has declared, a registry from each key (the whole prefix of
token ids a full block ends) to its block and that block's K and V per layer, and the
list of cached blocks (registered, no holder) in the order they became cached. A hit
copies the registry's data into the new sequence's token lists; eviction drops a key.

Sliding window (CONTRACT.md "Sliding window (opt-in)") adds two plain steps: after each
append, every table entry whose positions are all before every layer's window is let go, as
`free` lets go, and becomes RELEASED (-1); `gather` returns the window's slice of the token
lists. A windowed hit puts RELEASED entries, and None for their positions, before the blocks
it takes. The token lists keep every position the sequence wrote.

A profile (`oracle.profile`) names the choices the contract leaves to a port, and the model
takes the same ones: which block `reuse` takes (the lowest free, then the oldest cached; or
the front of one queue in release order) and what `duplicates` does with a second block
under a registered key. `lifetime[b]` counts how often block b went back to the pool (its
last holder let go and it kept no key, or it was evicted, or it lost its key while cached):
a block's identity lasts from one such moment to the next, which is what a renaming of
block ids is bound to (`oracle.id_renaming`).
"""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

import numpy as np

from .profile import Profile
from .registration import Registration


class OutOfBlocks(RuntimeError):
    """The model's own OutOfBlocks; tests match it to the implementation's."""


class Position(NamedTuple):
    """What the model keeps of one position of one layer: its K and V, each [H, D] float16."""

    k: np.ndarray
    v: np.ndarray


Layers = list[list[Position | None]]  # layer -> its positions, in order (None: skipped by a windowed hit)
Key = tuple[int, ...]  # the token ids of positions 0 .. (i+1)B-1: the prefix a full block i ends


class Registered(NamedTuple):
    """A block registered under a key, with its K and V per layer (what a hit copies)."""

    block: int
    layers: Layers


FREE: Final = None  # a free block's place in the release order (`ModelKVCache.release_order`)
RELEASED: Final = -1  # a table entry the sliding window let go
MAX_BLOCKS = 2**31 - 1  # block ids are the int32 of block_table
# A pool (K and V) of this many bytes or more is MemoryError: no 64-bit address space holds it.
POOL_BYTES_LIMIT = 2**63


def _ask_for_memory(pool_bytes: int) -> None:
    """MemoryError unless the machine would give two pools of this many bytes (K and V).

    The model stores no pool, so it asks: two arrays of the pools' size at once, never touched (the
    OS maps pages on first touch) and dropped at once. Whether memory is to be had depends on the
    machine, and this is the machine's own answer, the one an implementation that allocates gets.
    """
    try:
        k = np.empty(pool_bytes, dtype=np.uint8)
        v = np.empty(pool_bytes, dtype=np.uint8)
    except (MemoryError, ValueError):
        raise MemoryError(f"two pools of {pool_bytes} bytes cannot be allocated") from None
    del k, v


def _integer(value: Any, what: str) -> int:
    if type(value) is int:  # the common case, answered at once (a bool's type is bool, not int)
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _token_ids(tokens: Any) -> list[int]:
    """Token ids: integers (bool excluded) >= 0."""
    try:
        items = list(tokens)
    except TypeError:
        raise TypeError(f"tokens must be a sequence of integers, got {tokens!r}") from None
    ids = [_integer(t, "token id") for t in items]
    if any(t < 0 for t in ids):
        raise ValueError(f"token ids must be >= 0, got {min(ids)}")
    return ids


def layer_window_list(layer_windows: Any, sliding_window: Any, n_layers: int) -> list[int | None] | None:
    """Each layer's window as `layer_windows` gives it (a list or tuple of L entries, each None or an integer
    from 2 to 2^31 - 1), or None when it is not given (then `sliding_window` is every layer's); both given is
    ValueError."""
    if layer_windows is None:
        return None
    if sliding_window is not None:
        raise ValueError("sliding_window and layer_windows are both given")
    if not isinstance(layer_windows, (list, tuple)):
        raise TypeError(f"layer_windows must be a list or tuple, got {layer_windows!r}")
    if len(layer_windows) != n_layers:
        raise ValueError(f"layer_windows has {len(layer_windows)} entries for {n_layers} layers")
    for w in layer_windows:
        if w is not None and not 2 <= _integer(w, "a layer's window") <= MAX_BLOCKS:
            raise ValueError("a layer's window must be from 2 to 2^31 - 1")
    return [None if w is None else int(w) for w in layer_windows]


def _real_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x)
    is_real = np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    if arr.dtype == np.bool_ or not is_real:
        raise TypeError(f"{what} has dtype {arr.dtype}, not a real number")
    return arr


class ModelKVCache:
    """What every call of CONTRACT.md returns and raises, written for clarity, not speed."""

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
        layer_windows: Any = None,
        profile: Profile | None = None,
    ) -> None:
        sizes = [num_blocks, block_size, n_layers, n_kv_heads, d_head]
        names = ["num_blocks", "block_size", "n_layers", "n_kv_heads", "d_head"]
        for name, size in zip(names, sizes):  # argument by argument: each one's type, then its value
            if _integer(size, name) < 1:
                raise ValueError(f"{name} must be at least 1")
            if name == "num_blocks" and size > MAX_BLOCKS:
                raise ValueError("num_blocks must be at most 2^31 - 1: block ids are int32")
        if not isinstance(prefix_caching, bool):
            raise TypeError(f"prefix_caching must be a bool, got {prefix_caching!r}")
        if sliding_window is not None and not 2 <= _integer(sliding_window, "sliding_window") <= MAX_BLOCKS:
            raise ValueError("sliding_window must be from 2 to 2^31 - 1")
        given = layer_window_list(layer_windows, sliding_window, int(n_layers))
        pool_bytes = 2 * math.prod(int(s) for s in sizes)  # float16: 2 bytes a value, a pool for K and one for V
        if 2 * pool_bytes >= POOL_BYTES_LIMIT:  # before anything of num_blocks' size is built
            raise MemoryError("K and V need 4 * N * B * L * H * D bytes: 2^63 or more")
        _ask_for_memory(pool_bytes)
        self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head = (int(s) for s in sizes)
        self.prefix_caching = prefix_caching
        windows = given if given is not None else [self.window_or_none(sliding_window)] * self.n_layers
        self.layer_windows = windows  # each layer's window (None: full attention)
        self.window = windows[0] if len(set(windows)) == 1 else None  # the window every layer has, if one
        self.group_windows = list(dict.fromkeys(windows))  # a group a window, in the order of their first layers
        self.group_of = [self.group_windows.index(w) for w in windows]  # layer -> its group
        self.profile = profile or Profile()
        self.registration = Registration(self.profile.registration, self.block_size, self.group_windows)  # which full blocks register
        self.tokens: dict[int, Layers] = {}  # seq -> layer -> positions
        # group -> seq -> block ids in position order (`tables`: group 0's, every table when there is one group)
        self.group_tables: list[dict[int, list[int]]] = [{} for _ in self.group_windows]
        self.declared: dict[int, list[int]] = {}  # seq -> the token ids of its positions, as far as declared
        # group -> key -> the blocks registered under it, earliest first (more than one only under duplicates=keep)
        self.registries: list[dict[Key, list[Registered]]] = [{} for _ in self.group_windows]
        self.cached: list[int] = []  # registered blocks no table holds, cached longest ago first (the eviction order)
        # Every block with no holder, free or cached, in the order each was released (a fresh pool: 0, 1, 2, ...):
        # reuse=release-order's queue. A cached block is there by its id; a free one as FREE, since free blocks
        # are alike (no holder, no key, nothing to read): the model names the one it takes the lowest free.
        self.release_order: list[int | None] = [FREE] * self.num_blocks
        self.lifetime = [0] * self.num_blocks  # how often each block went back to the pool
        self.ended: list[int] = []  # every block whose lifetime ended, in order (a transcript's `# released` lines)
        self.evictions = 0
        self.closed = False

    @staticmethod
    def window_or_none(window: Any) -> int | None:
        return None if window is None else int(window)

    # -- what an observer reads (the explorer): no field by name ---------------------------------

    def is_closed(self) -> bool:
        return self.closed

    def live(self) -> list[int]:
        """The live sequence ids, in order."""
        return sorted(self.tables)

    def table(self, seq_id: int, layer: int = 0) -> list[int]:
        """block_table's ids as a list, for a live sequence (unchecked: an observer's, on the hot path)."""
        return self.group_tables[self.group_of[layer]][seq_id]

    def length(self, seq_id: int, layer: int) -> int:
        """seq_len's answer for a live sequence and a layer in range (unchecked: an observer's, on the hot path)."""
        return len(self.tokens[seq_id][layer])

    def released_count(self) -> int:
        """How many blocks' lifetimes have ended (each went back to the pool)."""
        return len(self.ended)

    def released(self, since: int = 0) -> list[int]:
        """The blocks whose lifetime ended, in order, from the `since`-th on (a transcript's `# released` lines)."""
        return self.ended[since:]

    # -- derived facts ------------------------------------------------------------------

    @property
    def tables(self) -> dict[int, list[int]]:
        """Group 0's tables: with one group (no `layer_windows`, or one window for every layer), every table."""
        return self.group_tables[0]

    @tables.setter
    def tables(self, value: dict[int, list[int]]) -> None:
        self.group_tables[0] = value

    @property
    def registry(self) -> dict[Key, list[Registered]]:
        """Group 0's keys: with one group, every key."""
        return self.registries[0]

    @registry.setter
    def registry(self, value: dict[Key, list[Registered]]) -> None:
        self.registries[0] = value

    def all_tables(self) -> list[list[int]]:
        return [table for tables in self.group_tables for table in tables.values()]

    def holders(self, block: int) -> int:
        return sum(table.count(block) for table in self.all_tables())

    def registered(self) -> set[int]:
        return {entry.block for registry in self.registries for entries in registry.values() for entry in entries}

    def free_blocks(self) -> list[int]:
        """Blocks with no holder and no key, lowest first."""
        held = {b for table in self.all_tables() for b in table}
        registered = self.registered()
        return [b for b in range(self.num_blocks) if b not in held and b not in registered]

    def available(self) -> list[int]:
        """The blocks an append can take, in the order it takes them (CONTRACT.md, Profiles: `reuse`).

        free-first: every free block, lowest first, then every cached one, cached longest ago first.
        release-order: the release order from its front, each FREE place named by the lowest free block
        not named yet (free blocks are alike, so the model's ids stay the lowest-free ones).
        """
        if self.profile.reuse == "free-first":
            return self.free_blocks() + self.cached
        lowest = iter(self.free_blocks())
        return [next(lowest) if block is FREE else block for block in self.release_order]

    def unregister(self, block: int) -> None:
        """The block's key goes (its other blocks, under duplicates=keep, stay)."""
        self.registries = [
            {key: kept for key, entries in registry.items() if (kept := [e for e in entries if e.block != block])}
            for registry in self.registries
        ]

    def end(self, block: int) -> None:
        """The block went back to the pool: its identity ends (a renaming of ids lets its name go)."""
        self.lifetime[block] += 1
        self.ended.append(block)

    def evict(self, block: int) -> None:
        """Take a cached block for reuse: its key goes, and so does its identity; it is free now, in its place."""
        self.cached.remove(block)
        self.release_order[self.release_order.index(block)] = FREE
        self.unregister(block)
        self.end(block)
        self.evictions += 1

    def take(self, block: int) -> None:
        """A block no table holds enters one. A cached one leaves the eviction order and its place in the
        release order; a free one, the first FREE place there (free blocks are alike)."""
        if block in self.cached:
            self.cached.remove(block)
            self.release_order.remove(block)
        else:
            self.release_order.remove(FREE)

    def hit(self, tokens: list[int]) -> list[list[int | None]]:
        """Each group's table for a prompt's hit, ending before its last token: k blocks for the largest k
        that every group can serve (`can_serve`), the blocks a group does not need None."""
        groups = range(len(self.group_windows))
        k = (len(tokens) - 1) // self.block_size
        while not all(self.can_serve(g, tokens, k) for g in groups):
            k -= 1
        return [[None if j < self.first_needed(g, k) else self.registered_block(g, tokens, j) for j in range(k)] for g in groups]

    def first_groups_hit(self, tokens: list[int]) -> int:
        """The hit, in blocks, that the group a hit is looked up in first (a full-attention group if there is one,
        else group 0) could serve alone: the junction of a hybrid model under registration=replay-tail."""
        first = self.group_windows.index(None) if None in self.group_windows else 0
        k = (len(tokens) - 1) // self.block_size
        while not self.can_serve(first, tokens, k):
            k -= 1
        return k

    def can_serve(self, group: int, tokens: list[int], k: int) -> bool:
        """Whether the group's keys of the blocks its layers need for the first k blocks are registered: every one
        for full attention; with a window, the last need = ceil((W-1)/B) (all k when k < need)."""
        return all(self.registered_block(group, tokens, j) is not None for j in range(self.first_needed(group, k), k))

    def first_needed(self, group: int, k: int) -> int:
        """The first of k blocks a hit needs in the group: 0, or with a window W, k - ceil((W-1)/B)."""
        window = self.group_windows[group]
        return 0 if window is None else max(0, k - math.ceil((window - 1) / self.block_size))

    def registered_block(self, group: int, tokens: list[int], j: int) -> int | None:
        """The block registered under block j's key in the group (the earliest), if any."""
        entries = self.registries[group].get(tuple(tokens[: (j + 1) * self.block_size]))
        return entries[0].block if entries else None

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

    def add_seq(self, seq_id: int, tokens: Any = ()) -> int:
        self._open()
        sid = self._new(seq_id)
        ids = _token_ids(tokens)
        self.tokens[sid] = [[] for _ in range(self.n_layers)]
        for tables in self.group_tables:
            tables[sid] = []
        self.declared[sid] = ids if self.prefix_caching else []
        if not self.prefix_caching:
            return 0
        hybrid_junction = self.registration.sparse and len(self.group_windows) > 1  # only replay-tail reads it
        self.registration.add(sid, ids, self.first_groups_hit(ids) if hybrid_junction else None)
        for g, blocks in enumerate(self.hit(ids)):
            table, layers = self.group_tables[g][sid], self.layers_of(g)
            for block in blocks:
                if block is None:  # before a windowed hit's blocks: a released entry, its positions unknown
                    table.append(RELEASED)
                    for layer in layers:
                        self.tokens[sid][layer] += [None] * self.block_size
                    continue
                key = tuple(ids[: (len(table) + 1) * self.block_size])
                for layer in layers:
                    self.tokens[sid][layer] += self.registries[g][key][0].layers[layer]
                if block in self.cached:  # else another table holds it
                    self.take(block)
                table.append(block)
        return len(self.tables[sid]) * self.block_size

    def layers_of(self, group: int) -> list[int]:
        return [layer for layer in range(self.n_layers) if self.group_of[layer] == group]

    def extend(self, seq_id: int, tokens: Any) -> None:
        sid = self._live(seq_id)
        ids = _token_ids(tokens)
        if self.prefix_caching:
            self.declared[sid] += ids

    def fork(self, parent: int, child: int) -> None:
        pid = self._live(parent)
        cid = self._new(child)
        self.tokens[cid] = [list(layer) for layer in self.tokens[pid]]
        for tables in self.group_tables:
            tables[cid] = list(tables[pid])
        self.declared[cid] = list(self.declared[pid])
        self.registration.fork(pid, cid)

    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None:
        sid = self._live(seq_id)
        li = self._layer(layer)
        k = _real_array(k, "k")  # k wholly (real, then 3-D) before v
        if k.ndim != 3:
            raise ValueError("k must be 3-D")
        v = _real_array(v, "v")
        if v.ndim != 3 or k.shape != v.shape:
            raise ValueError("v must be 3-D, of k's shape")
        if k.shape[0] != self.n_kv_heads or k.shape[2] != self.d_head or k.shape[1] == 0:
            raise ValueError(f"bad chunk shape {k.shape}")
        group = self.group_of[li]
        table, layers = self.group_tables[group][sid], self.layers_of(group)
        start = len(self.tokens[sid][li])
        end = start + k.shape[1]  # one past the last position written
        if self.prefix_caching and end > len(self.declared[sid]):
            raise ValueError(f"positions up to {end - 1} need declared token ids; {len(self.declared[sid])} are declared")
        touched = range(start // self.block_size, (end - 1) // self.block_size + 1)
        needs_copy = {i for i in touched if i < len(table) and self.holders(table[i]) > 1}
        needs_new = {i for i in touched if i >= len(table)}
        # The profile's reuse order: the lowest free block, and once none is free, the oldest cached
        # one; or the front of the release order. No block becomes free or cached during an append
        # before its blocks are taken: a copied block keeps its other holders.
        available = self.available()
        if len(needs_copy) + len(needs_new) > len(available):
            raise OutOfBlocks(f"needs {len(needs_copy) + len(needs_new)} blocks")
        taken = iter(available)
        for i in touched:
            if i in needs_copy or i in needs_new:
                block = next(taken)
                if block in self.cached:
                    self.evict(block)
                self.take(block)
                if i in needs_copy:
                    table[i] = block
                else:
                    table.append(block)
        full_before = min(len(self.tokens[sid][layer]) for layer in layers) // self.block_size
        self.tokens[sid][li] += [self.position(k, v, t) for t in range(k.shape[1])]
        assert len(table) == math.ceil(max(len(self.tokens[sid][layer]) for layer in layers) / self.block_size)
        if self.prefix_caching:
            self.register(sid, group, range(full_before, min(len(self.tokens[sid][layer]) for layer in layers) // self.block_size))
        window = self.group_windows[group]
        if window is not None:
            self.release(sid, group, window)

    def release(self, sid: int, group: int, window: int) -> None:
        """Let go of every entry of the group's table whose positions all come before every window of the group's
        layers, (i+1)B <= min len - W + 1, from the last such entry to the first, as `free` does; each becomes RELEASED."""
        table = self.group_tables[group][sid]
        shortest = min(len(self.tokens[sid][layer]) for layer in self.layers_of(group))
        for i in reversed(range(len(table))):
            if (i + 1) * self.block_size <= shortest - window + 1 and table[i] != RELEASED:
                block, table[i] = table[i], RELEASED
                self.let_go(block)

    def position(self, k: np.ndarray, v: np.ndarray, t: int) -> Position:
        """What the model keeps of position t of a chunk: its K and V, rounded to float16."""
        return Position(k[:, t, :].astype(np.float16), v[:, t, :].astype(np.float16))

    def register(self, sid: int, group: int, indices: range) -> None:
        """Register the blocks this append made full, under their keys. When a key names a block already,
        the profile's `duplicates` says: the new block stays unregistered (first), is registered too
        (keep), or takes the key from the old one (newest), which, held by no one, is then free."""
        bs = self.block_size
        for i in filter(lambda i: self.registration.keeps(sid, i, group), indices):
            key = tuple(self.declared[sid][: (i + 1) * bs])
            block = self.group_tables[group][sid][i]
            assert block not in self.registered(), "a block that just became full was written by this sequence alone"
            ours = self.layers_of(group)  # the layers a block of this group holds; the others' lists stay empty
            layers = [list(self.tokens[sid][layer][i * bs : (i + 1) * bs]) if layer in ours else [] for layer in range(self.n_layers)]
            entries = self.registries[group].setdefault(key, [])
            if entries and self.profile.duplicates == "newest":
                for old in entries:
                    if old.block in self.cached:  # it loses its key: free now, in its place in the release order
                        self.cached.remove(old.block)
                        self.release_order[self.release_order.index(old.block)] = FREE
                        self.end(old.block)
                entries.clear()
            if not entries or self.profile.duplicates != "first":
                entries.append(Registered(block, layers))

    def window_of(self, sid: int, layer: int) -> list[Position]:
        """The positions gather returns: every one, or with a window W (the layer's) the last W - 1."""
        toks, window = self.tokens[sid][layer], self.layer_windows[layer]
        shown = toks if window is None else toks[max(0, len(toks) - window + 1) :]
        assert all(p is not None for p in shown), "a windowed hit served every position its window needs"
        return [p for p in shown if p is not None]

    def gather(self, seq_id: int, layer: int) -> tuple[np.ndarray, np.ndarray]:
        sid = self._live(seq_id)
        toks = self.window_of(sid, self._layer(layer))
        empty = np.zeros((self.n_kv_heads, 0, self.d_head), dtype=np.float16)
        if not toks:
            return empty, empty.copy()
        k = np.stack([p.k for p in toks], axis=1)
        v = np.stack([p.v for p in toks], axis=1)
        return k, v

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        sid = self._live(seq_id)
        return self.length(sid, self._layer(layer))

    def block_table(self, seq_id: int, layer: int = 0) -> np.ndarray:
        """The table of the layer's group."""
        sid = self._live(seq_id)
        return np.array(self.group_tables[self.group_of[self._layer(layer)]][sid], dtype=np.int32)

    def free(self, seq_id: int) -> None:
        """Drop the sequence; its blocks are let go from the last entry of each table to the first: under the
        profile's freeing=by-group each group's table in turn, group 0 first; under by-position, position by
        position, every group's entry there in group order."""
        sid = self._live(seq_id)
        tables = [tables.pop(sid) for tables in self.group_tables]
        del self.tokens[sid], self.declared[sid]
        self.registration.free(sid)
        if self.profile.freeing == "by-group":
            order = [block for table in tables for block in reversed(table)]
        else:
            order = [t[i] for i in reversed(range(max(map(len, tables)))) for t in tables if i < len(t)]
        for block in order:
            if block != RELEASED:
                self.let_go(block)

    def let_go(self, block: int) -> None:
        """A table let go of `block`: if that was its last holder, it becomes cached (registered) or free."""
        if self.holders(block) == 0:
            if block in self.registered():
                self.cached.append(block)
                self.release_order.append(block)
            else:
                self.release_order.append(FREE)
                self.end(block)

    def stats(self) -> dict[str, int]:
        self._open()
        free, cached = len(self.free_blocks()), len(self.cached)
        assert set(self.cached) == {b for b in self.registered() if self.holders(b) == 0}
        assert len(self.release_order) == free + cached and self.release_order.count(FREE) == free
        return {"free": free, "used": self.num_blocks - free - cached, "cached": cached, "evictions": self.evictions}

    def num_free_blocks(self) -> int:
        """The blocks an append can take: free and cached."""
        stats = self.stats()
        return stats["free"] + stats["cached"]

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> ModelKVCache:
        self._open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- page tables for kernels (CONTRACT.md, "Page tables for kernels"): oracle/page_tables.py, position by position

    def page_table(self, seq_ids: Any, layer: Any, page_size: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from . import page_tables  # it imports this module

        return page_tables.page_table(self, seq_ids, layer, page_size)

    def slot_mapping(self, seq_id: Any, layer: Any, start: Any, count: Any) -> np.ndarray:
        from . import page_tables

        return page_tables.slot_mapping(self, seq_id, layer, start, count)

    def kv_pages(self, layer: Any, page_size: Any = None) -> tuple[np.ndarray, np.ndarray]:
        from . import page_tables

        return page_tables.kv_pages(self, layer, page_size)
