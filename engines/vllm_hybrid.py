"""PagedKVCache with CONTRACT.md's hybrid models on vLLM v1's own `HybridKVCacheCoordinator` (vllm 0.33.0).

    PYTHONPATH=. ci/gate --impl engines.vllm_hybrid --xfails engines/vllm_hybrid.xfails

vllm_window.py with `layer_windows=`: one `KVCacheGroupSpec` a group of the contract (a window, or None for a
`FullAttentionSpec`), in the order of the groups' first layers, so with two or more groups `KVCacheManager`
runs vLLM's `HybridKVCacheCoordinator` over one `FullAttentionManager` / `SlidingWindowManager` a group and
one `BlockPool`; `prefix_cache_retention_interval=None` (every full block registered; vllm_hybrid_served.py:
0). `sliding_window=W` and no keyword are vllm_window's cache. Which calls go to the engine:
- `add_seq`: `KVCacheManager.get_computed_blocks` (the coordinator's fixed point over the groups, aligned),
  then `allocate_slots(req, 0, n, blocks)` (each group's hit touched, a window group's skipped blocks null);
- an append writes one layer, so only its group takes blocks (CONTRACT.md, "Hybrid models"): that group's
  manager's own `get_num_blocks_to_allocate` against `BlockPool.get_num_free_blocks` (refused: nothing
  changed), then its `allocate_new_blocks` (allocate_slots would grow every group at once);
- registration: the group's `cache_blocks(req, n, retention_interval=, replay_boundaries=)`, the call
  `KVCacheCoordinator.cache_blocks` makes for each group, with the group's own length;
- release: the window group's `remove_skipped_blocks(req, min of its layers' lengths)` after each append;
- `free`: `KVCacheManager.free` (the coordinator frees group 0's table, then group 1's, each tail first);
- fork: `BlockPool.touch` on every group's blocks; copy on write: `get_new_blocks`, `free_blocks`.
The adapter's own (beyond vllm_window's): which group a layer is in, and the lengths of each group's layers.
"""

from __future__ import annotations

from typing import Any

from engines import vllm_v1
from engines._frontend import Engine, Frontend, OutOfBlocks, engine_calls
from paged.checks import as_layer_windows

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

from vllm.v1.core.kv_cache_coordinator import replay_boundaries  # noqa: E402 - loaded by vllm_v1 (vllm_engine.load)

# vllm_window's, measured the same way (tests/test_engines.py, the hybrid sessions): one free queue and one hash
# map (keyed by group) for every group, and a free lets go group by group (freeing=by-group, the default).
PROFILE = vllm_v1.PROFILE


class _Group:
    """One group's view of the backend: what _frontend.Frontend asks of a backend, on that group's manager."""

    def __init__(self, backend: _HybridBackend, index: int) -> None:
        self.backend, self.index = backend, index
        self.stm = Engine(backend.mgr.coordinator.single_type_managers[index])  # its calls counted

    def _rid(self, sid: int) -> str:
        return str(self.backend.reqs[sid].request_id)

    def table(self, sid: int) -> list[int]:
        return [b.block_id - 1 for b in self.stm.req_to_blocks.get(self._rid(sid), [])]

    def holders(self, block: int) -> int:
        return self.backend.holders(block)

    def can_take(self, n: int) -> bool:
        return self.backend.can_take(n)

    def grow(self, sid: int, old_len: int, new_len: int, reserve: int) -> bool:
        rid = self._rid(sid)
        need = self.stm.get_num_blocks_to_allocate(rid, new_len, [], old_len, 0, new_len)
        if need + reserve > self.backend.num_free():
            return False
        self.stm.allocate_new_blocks(rid, new_len, new_len)
        return True

    def cow(self, sid: int, index: int) -> int:
        new = self.backend.pool.get_new_blocks(1)[0]
        blocks = self.stm.req_to_blocks[self._rid(sid)]
        old, blocks[index] = blocks[index], new
        self.backend.pool.free_blocks([old])
        return int(new.block_id) - 1

    def register(self, sid: int, full_positions: int) -> None:
        b, req = self.backend, self.backend.reqs[sid]
        coord = b.mgr.coordinator
        boundaries = replay_boundaries(req.num_prompt_tokens, coord.scheduler_block_size, use_eagle=False)
        self.stm.cache_blocks(
            req, coord.get_num_cacheable_tokens(full_positions, self.index),
            retention_interval=coord.retention_interval, replay_boundaries=boundaries,
        )

    def release(self, sid: int, settled: int) -> None:
        self.stm.remove_skipped_blocks(self._rid(sid), settled)


class _HybridBackend(vllm_v1._Backend):
    """vllm_v1's backend over one vLLM group a window (a full-attention group for None)."""

    RETENTION: int | None = None  # KVCacheConfig.prefix_cache_retention_interval (vllm_hybrid_served.py: 0)

    def __init__(self, num_blocks: int, block_size: int, caching: bool, windows: list[int | None]) -> None:
        super().__init__(num_blocks, block_size, caching, None, self.RETENTION, windows)
        self.groups = [_Group(self, g) for g in range(len(windows))]

    def fork(self, parent: int, child: int) -> None:
        super().fork(parent, child)  # the child's request, group 0's table and references
        prid, crid = self.reqs[parent].request_id, self.reqs[child].request_id
        for stm in self.mgr.coordinator.single_type_managers[1:]:
            blocks = list(stm.req_to_blocks.get(prid, ()))
            self.pool.touch(blocks)
            if blocks:
                stm.req_to_blocks[crid] = blocks
            if prid in stm.num_cached_block:
                stm.num_cached_block[crid] = stm.num_cached_block[prid]


class PagedKVCache(Frontend):
    """CONTRACT.md's cache, hybrid models included, on vLLM v1's KVCacheManager; see the module docstring."""

    hybrid_backend = _HybridBackend
    _engine: _HybridBackend  # make_backend's: one view of it a group

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
    ) -> None:
        self._layer_windows = layer_windows
        self._open((num_blocks, block_size, n_layers, n_kv_heads, d_head), prefix_caching, sliding_window)

    def _check_more(self) -> None:
        given = as_layer_windows(self._layer_windows, self.sliding_window, self.n_layers)  # CONTRACT.md's order
        windows = given if given is not None else [self.sliding_window] * self.n_layers
        self._windows = list(dict.fromkeys(windows))  # a group a window, in the order of their first layers
        self._layers = [tuple(i for i, w in enumerate(windows) if w == gw) for gw in self._windows]
        self._group_of = [self._windows.index(w) for w in windows]

    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> _HybridBackend:
        return self.hybrid_backend(num_blocks, block_size, prefix_caching, self._windows)

    def _group(self, layer: int) -> tuple[Any, tuple[int, ...], int | None]:
        g = self._group_of[layer]
        return self._engine.groups[g], self._layers[g], self._windows[g]
