"""Under `allocation=any`: an implementation whose caches answer `block_table` in the oracle's ids.

Each cache made through `OracleIdsImpl` runs a shadow `ModelKVCache` of the same profile with
the same calls. `block_table` checks the port's table against the shadow's up to the renaming
of `oracle.id_renaming` (sharing, and each block's id for its lifetime, stay exact) and returns
it in the oracle's ids, so every test that compares tables, the seed's literal `[0, 1, 2]`
included, runs unchanged. Every id must be a block of the pool, 0 .. N-1, as under every profile. A broken renaming fails the call with the suite's message.
The page tables for kernels are renamed through their blocks the same way (`page_table`'s indices, `slot_mapping`'s
slots, `kv_pages`' pages moved to the oracle's ids). All other calls are the port's own answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oracle import ModelKVCache
from oracle.profile import Profile
from oracle.id_renaming import BlockNames


class TablesOnly(ModelKVCache):
    """The oracle keeping no K/V data (a shadow only needs its tables, lengths and keys)."""

    NOTHING = (np.zeros(0, np.float16), np.zeros(0, np.float16))

    def position(self, k: np.ndarray, v: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray]:
        return self.NOTHING


class OracleIdsCache:
    """A port's cache with its block ids read through the renaming to the shadow oracle's."""

    def __init__(self, inner_class: Any, profile: Profile, *sizes: Any, **kwargs: Any) -> None:
        self._inner = inner_class(*sizes, **kwargs)
        try:
            self._shadow: ModelKVCache | None = TablesOnly(*sizes, profile=profile, **kwargs)
        except Exception:  # noqa: BLE001 - the port accepted sizes the oracle refuses: the test says so
            self._shadow = None
        self._names = BlockNames(self._shadow.num_blocks if self._shadow is not None else 0)
        self._follow = True  # the shadow gets every call (until a caller's own model is adopted)
        self._seen = 0  # how much of the shadow's log of ended lifetimes the names have seen
        # The port's tables read and checked since its last call that can change them (a page-table export reads
        # the tables of its batch again: through a driver, one request each); cleared by every such call.
        self._read: dict[tuple[int, ...], np.ndarray] = {}

    def adopt(self, model: ModelKVCache) -> None:
        """Read the ids through `model`, which the caller drives with the same calls, made first (a state
        machine's own oracle), instead of a shadow of this cache's own: the same check at half the cost."""
        if self._shadow is None:  # no shadow could be made of these sizes: no name is bound yet
            self._names = BlockNames(model.num_blocks)
        self._shadow, self._follow, self._seen = model, False, len(model.ended)

    def _both(self, name: str, *args: Any) -> Any:
        self._read.clear()
        if self._shadow is not None and self._follow:
            try:
                getattr(self._shadow, name)(*args)
            except Exception:  # noqa: BLE001 - the test checks the port's error; the shadow only follows
                pass
        return getattr(self._inner, name)(*args)

    def block_table(self, seq_id: Any, *layer: Any) -> np.ndarray:
        """The port's table (of the layer's group, in a hybrid model: every group's blocks are of the one pool,
        so one renaming names them all) in the oracle's ids, after checking it against the shadow's. Read again
        before any call that can change it (plain int arguments only), it is the answer read and checked then."""
        key = (seq_id, *layer)
        plain = all(type(x) is int for x in key)
        if plain and key in self._read:
            return self._read[key].copy()
        got = self._inner.block_table(seq_id, *layer)
        if self._shadow is None:
            return got  # type: ignore[no-any-return]
        try:
            want = self._shadow.block_table(seq_id, *layer).tolist()
        except Exception:  # noqa: BLE001 - the port answered where the oracle refuses: the test says so
            return got  # type: ignore[no-any-return]
        ended = self._shadow.ended
        for block in ended[self._seen :]:
            self._names.release(block)
        self._seen = len(ended)
        call = f"block_table({', '.join(map(str, (seq_id, *layer)))})"
        problem = self._names.check(call, got.tolist(), want)
        if problem is not None:
            raise AssertionError(f"{problem} [{call}, allocation=any]")
        renamed = np.array(self._names.oracle_ids(got.tolist()), dtype=got.dtype)
        if plain:
            self._read[key] = renamed.copy()
        return renamed

    # Page tables for kernels: a kernel page of block b is b * r + j (r = B / P) and a slot b * B + o, so each is
    # renamed through its block; kv_pages moves every page of a block bound now to its oracle id (a copy).

    def _bind(self, seq_ids: list[Any], layer: Any) -> dict[int, int]:
        """The renaming, port id -> oracle id, after checking the tables of `seq_ids` (of the layer's group)."""
        for s in seq_ids:
            self.block_table(s, layer)
        return self._names.bound()

    def _renamed(self, ids: np.ndarray, unit: int, names: dict[int, int], what: str) -> np.ndarray:
        """Kernel pages (unit r) or slots (unit B) of the port's blocks as the oracle's; -1 stays."""
        out = ids.copy()
        for i, x in enumerate(ids.tolist()):
            if x == -1:
                continue
            if x // unit not in names:
                raise AssertionError(f"{what}[{i}]={x}, but should be in a block of a live table (block {x // unit} is in none) [{what}, allocation=any]")
            out[i] = names[x // unit] * unit + x % unit
        return out

    def page_table(self, seq_ids: Any, layer: Any, *page_size: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if hasattr(seq_ids, "__iter__") and not isinstance(seq_ids, (str, bytes)):
            seq_ids = list(seq_ids)  # read once: an iterator would be empty for the renaming
        indptr, indices, last = self._inner.page_table(seq_ids, layer, *page_size)
        if self._shadow is None:
            return indptr, indices, last
        size = self._shadow.block_size if not page_size or page_size[0] is None else int(page_size[0])
        names = self._bind(seq_ids, layer)
        return indptr, self._renamed(indices, self._shadow.block_size // size, names, "page_table indices"), last

    def slot_mapping(self, seq_id: Any, layer: Any, start: Any, count: Any) -> np.ndarray:
        slots = self._inner.slot_mapping(seq_id, layer, start, count)
        if self._shadow is None:
            return slots  # type: ignore[no-any-return]
        return self._renamed(slots, self._shadow.block_size, self._bind([seq_id], layer), f"slot_mapping({seq_id}, {layer}, {start}, {count})")

    def kv_pages(self, layer: Any, *page_size: Any) -> tuple[np.ndarray, np.ndarray]:
        pages = self._inner.kv_pages(layer, *page_size)
        if self._shadow is None:
            return pages  # type: ignore[no-any-return]
        size = self._shadow.block_size if not page_size or page_size[0] is None else int(page_size[0])
        r, names = self._shadow.block_size // size, self._bind(self._shadow.live(), layer)
        out = tuple(np.zeros_like(p) for p in pages)
        for port, oracle in names.items():
            for mine, theirs in zip(out, pages):
                mine[oracle * r : (oracle + 1) * r] = theirs[port * r : (port + 1) * r]
        return out[0], out[1]

    def add_seq(self, *args: Any) -> Any:
        return self._both("add_seq", *args)

    def extend(self, *args: Any) -> Any:
        return self._both("extend", *args)

    def fork(self, *args: Any) -> Any:
        return self._both("fork", *args)

    def append(self, *args: Any) -> Any:
        return self._both("append", *args)

    def free(self, *args: Any) -> Any:
        return self._both("free", *args)

    def close(self) -> Any:
        return self._both("close")

    def __enter__(self) -> OracleIdsCache:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        self._read.clear()
        if self._shadow is not None and self._follow:
            self._shadow.close()
        return self._inner.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:  # gather, seq_len, stats, num_free_blocks: the port's own
        return getattr(self._inner, name)


class OracleIdsImpl:
    """A module-like object: the implementation, with caches made as `OracleIdsCache`."""

    def __init__(self, module: Any, profile: Profile) -> None:
        self._module = module
        self.OutOfBlocks = module.OutOfBlocks
        inner, outer = module.PagedKVCache, self

        class PagedKVCache(OracleIdsCache):
            def __init__(self, *sizes: Any, **kwargs: Any) -> None:
                super().__init__(inner, outer.profile, *sizes, **kwargs)

        self.profile = profile
        self.PagedKVCache = PagedKVCache

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)
