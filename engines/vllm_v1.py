"""PagedKVCache on vLLM v1's own block manager (vllm 0.33.0 from PyPI, `pip install -e '.[engines]'`).

    PYTHONPATH=. ci/gate --impl engines.vllm_v1 --xfails engines/vllm_v1.xfails

Which calls go to the engine (vllm/v1/core, unmodified, loaded from the installed wheel):
- `KVCacheManager` (kv_cache_manager.py) with one full-attention group, built from the real
  `KVCacheConfig` / `KVCacheGroupSpec` / `FullAttentionSpec`; under it the real coordinator,
  `FullAttentionManager`, `BlockPool`, `FreeKVCacheBlockQueue` and `KVCacheBlock`;
- prefix hashing: the real `get_request_block_hasher` with vLLM's default hash, `sha256`
  (vllm/utils/hashing.py), chained from the real `NONE_HASH`;
- `add_seq` with tokens: `get_computed_blocks` (the hit: at most len - 1 tokens, full blocks),
  then `allocate_slots(req, 0, n, blocks, delay_cache_blocks=True)` (takes the references);
- `append` growing the longest layer: `allocate_slots(req, new, reserved_blocks=copies,
  delay_cache_blocks=True)`; None (refused before changing anything) is OutOfBlocks;
- registration: `KVCacheManager.cache_blocks(req, min(lens))`, after the write (vLLM's
  scheduler registers in allocate_slots, before the forward pass writes every layer at once;
  with per-layer lengths a block is full only when its last layer is written, hence
  delay_cache_blocks and an explicit cache_blocks);
- `free`: `KVCacheManager.free` (tail first; unhashed blocks to the front of the free queue,
  hashed ones to the back);
- a copy-on-write copy's block: `BlockPool.get_new_blocks(1)`; letting go of the shared one:
  `BlockPool.free_blocks([old])`; fork's references: `BlockPool.touch(blocks)`.

The adapter's own (_frontend.py and below): argument checks, per-layer lengths, the K/V store,
fork (the child's block list and cached-block count in the manager's `req_to_blocks` and
`num_cached_block`, after `touch`), copy on write (replacing the entry in `req_to_blocks`),
the eviction count (it counts `BlockPool._maybe_evict_cached_block` returning True: a cached
block popped and stripped of its hash), and `stats()` (read from each block's `ref_cnt` and
`block_hash`).

Block 0 is vLLM's null block, taken at start. The engine gets N + 1 blocks and every id is
shown shifted by -1, so the cache has the contract's N usable blocks 0 .. N-1.

Stand-ins (vllm_engine.py): an empty `torch`, and the modules the manager imports but does
not use for a text-only, single-group, no-connector run.
"""

from __future__ import annotations

from typing import Any

from engines._frontend import Engine, Frontend, OutOfBlocks, engine_calls
from engines import vllm_engine

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

# Measured (tests/test_engines.py and README): any free block (LIFO for unhashed blocks), a free
# block before any cached one, cached blocks evicted in release order; a second block filled
# under a registered key is registered too, and a hit takes the first one registered.
PROFILE = "allocation=any,reuse=free-first,duplicates=keep"

_v = vllm_engine.load()
_RUNNING = _v.RequestStatus.RUNNING


class _Request:
    """The attributes of vllm.v1.request.Request that the manager reads (a text-only request)."""

    def __init__(self, request_id: str, tokens: list[int], hasher: Any) -> None:
        self.request_id = request_id
        self.all_token_ids = list(tokens)
        self.num_prompt_tokens = len(tokens)
        self.block_hashes: list[Any] = []
        self.num_computed_tokens = 0
        self.num_in_flight_tokens = 0
        self.status = _RUNNING
        self.lora_request = None
        self.mm_features: list[Any] = []
        self.cache_salt = None
        self.prompt_embeds = None
        self._prompt_embeds_per_block_hashes = None
        self.shared_prefix_boundary = 0
        self.session_id = None
        self.skip_reading_prefix_cache = False
        self.num_preemptions = 0
        self.kv_cache_report_mode = "incremental"
        self._hasher = hasher
        self.block_hashes += hasher(self)

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    def extend(self, tokens: list[int]) -> None:
        self.all_token_ids += tokens
        self.block_hashes += self._hasher(self)


class _Backend:
    def __init__(
        self, num_blocks: int, block_size: int, caching: bool, window: int | None = None, retention: int | None = None,
        windows: list[int | None] | None = None,
    ) -> None:
        mgr = _v.make_manager(num_blocks + 1, block_size, caching, window, retention, windows)  # vllm_window, vllm_hybrid
        self.mgr, self.pool = Engine(mgr), Engine(mgr.block_pool)  # every call into them counted (engine_calls)
        self.stm = mgr.coordinator.single_type_managers[0]  # its block lists: fields, read and set, not calls
        self.hasher = _v.get_request_block_hasher(block_size, _v.hash_fn)
        self.caching = caching
        self.reqs: dict[int, _Request] = {}
        self.evictions = 0
        evict = mgr.block_pool._maybe_evict_cached_block  # the engine's own, called by the engine

        def counted(block: Any) -> bool:
            evicted = evict(block)
            if evicted:
                self.evictions += 1
            return bool(evicted)

        mgr.block_pool._maybe_evict_cached_block = counted

    def add(self, sid: int, tokens: list[int]) -> int:
        req = self.reqs[sid] = _Request(f"seq-{sid}", tokens, self.hasher)
        if not (self.caching and tokens):
            return 0
        blocks, n, req.shared_prefix_boundary = self.mgr.get_computed_blocks(req)  # as vLLM's scheduler sets it
        if n:
            out = self.mgr.allocate_slots(req, 0, n, blocks, delay_cache_blocks=True)
            assert out is not None, "vLLM refused to take its own hit"
            req.num_computed_tokens = n
        return int(n)

    def extend(self, sid: int, tokens: list[int]) -> None:
        self.reqs[sid].extend(tokens)

    def fork(self, parent: int, child: int) -> None:
        preq = self.reqs[parent]
        creq = _Request(f"seq-{child}", [], self.hasher)
        creq.all_token_ids = list(preq.all_token_ids)
        creq.num_prompt_tokens = preq.num_prompt_tokens
        creq.block_hashes = list(preq.block_hashes)
        creq.num_computed_tokens = preq.num_computed_tokens
        blocks = list(self.stm.req_to_blocks.get(preq.request_id, ()))
        self.pool.touch(blocks)
        if blocks:
            self.stm.req_to_blocks[creq.request_id] = blocks
        if preq.request_id in self.stm.num_cached_block:
            self.stm.num_cached_block[creq.request_id] = self.stm.num_cached_block[preq.request_id]
        self.reqs[child] = creq

    def _blocks(self, sid: int) -> list[Any]:
        blocks: list[Any] = self.stm.req_to_blocks.get(self.reqs[sid].request_id, [])  # the manager's own list
        return blocks

    def table(self, sid: int) -> list[int]:
        return [b.block_id - 1 for b in self._blocks(sid)]

    def holders(self, block: int) -> int:
        return int(self.pool.blocks[block + 1].ref_cnt)

    def can_take(self, n: int) -> bool:
        return bool(self.pool.get_num_free_blocks() >= n)

    def grow(self, sid: int, old_len: int, new_len: int, reserve: int) -> bool:
        req = self.reqs[sid]
        req.num_computed_tokens = old_len
        out = self.mgr.allocate_slots(req, new_len - old_len, reserved_blocks=reserve, delay_cache_blocks=True)
        if out is None:
            return False
        req.num_computed_tokens = new_len
        return True

    def cow(self, sid: int, index: int) -> int:
        new = self.pool.get_new_blocks(1)[0]
        blocks = self.stm.req_to_blocks[self.reqs[sid].request_id]
        old, blocks[index] = blocks[index], new
        self.pool.free_blocks([old])
        return int(new.block_id) - 1

    def register(self, sid: int, full_positions: int) -> None:
        self.mgr.cache_blocks(self.reqs[sid], full_positions)

    def free(self, sid: int) -> None:
        self.mgr.free(self.reqs.pop(sid))

    def stats(self) -> dict[str, int]:
        used = cached = 0
        for b in self.pool.blocks[1:]:
            if b.ref_cnt > 0:
                used += 1
            elif b.block_hash is not None:
                cached += 1
        total = len(self.pool.blocks) - 1
        return {"free": total - used - cached, "used": used, "cached": cached, "evictions": self.evictions}

    def num_free(self) -> int:
        return int(self.pool.get_num_free_blocks())


class PagedKVCache(Frontend):
    """CONTRACT.md's cache on vLLM v1's KVCacheManager; see the module docstring."""

    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> _Backend:
        return _Backend(num_blocks, block_size, prefix_caching)
