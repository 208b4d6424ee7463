"""PagedKVCache with CONTRACT.md's sliding window on vLLM v1's own `SlidingWindowManager` (vllm 0.33.0).

    PYTHONPATH=. ci/gate --impl engines.vllm_window --xfails engines/vllm_window.xfails

vllm_v1.py with one change of group: `sliding_window=W` builds the `KVCacheManager` over one
`SlidingWindowSpec(sliding_window=W)` group (the real coordinator and `SlidingWindowManager`), with
`prefix_cache_retention_interval=None` (every full block registered); `sliding_window=None` is
vllm_v1's full-attention manager, unchanged. Every call of vllm_v1.py's list goes to the engine as
there; what the window adds, all vLLM's own code:
- hits: `get_computed_blocks` runs `SlidingWindowManager.find_longest_cache_hit` (ceil((W-1)/B)
  contiguous cached blocks searched from the right, else the cached run from block 0), and
  `allocate_slots` pads the skipped blocks with vLLM's null block (`add_local_computed_blocks`);
- release: `KVCacheManager.remove_skipped_blocks(req, min(lens))` at the end of each append, after
  `cache_blocks` (`get_num_skipped_tokens`, `_remove_blocks_in_range`: tail first, each replaced by
  the null block, then `BlockPool.free_blocks`); vLLM's scheduler makes the same call between steps;
- `allocate_slots` releases again at its start, before its capacity check, up to
  `num_computed_tokens - num_in_flight_tokens`; the adapter sets `num_in_flight_tokens` to
  max(lens) - min(lens), so that call finds nothing left to release and a refused append changes
  nothing (CONTRACT.md, last paragraph of "Sliding window").

The adapter's own, beyond vllm_v1.py's: the smallest layer length it last released to (per
sequence, copied by fork), and the windowed `gather` (_frontend.py). The null block (engine id 0)
shows as -1 after the id shift; fork copies the null entries (vLLM's `touch` and `free_blocks` skip
the null block), and copy on write never meets one (no write reaches a released entry).
"""

from __future__ import annotations

from typing import Any

from engines import vllm_v1
from engines._frontend import Frontend, OutOfBlocks, engine_calls

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

# vllm_v1's, measured the same way (tests/test_engines.py): the window changes which blocks go back, not the
# free queue's order or the hash map.
PROFILE = vllm_v1.PROFILE


class _WindowBackend(vllm_v1._Backend):
    """vllm_v1's backend on a SlidingWindowManager, plus each sequence's released-to length."""

    RETENTION: int | None = None  # KVCacheConfig.prefix_cache_retention_interval (vllm_window_served.py: 0)

    def __init__(self, num_blocks: int, block_size: int, caching: bool, window: int) -> None:
        super().__init__(num_blocks, block_size, caching, window, self.RETENTION)
        self.settled: dict[int, int] = {}  # sequence -> the smallest layer length it last released to

    def add(self, sid: int, tokens: list[int]) -> int:
        served = super().add(sid, tokens)  # a hit's skipped blocks are null already (add_local_computed_blocks)
        self.settled[sid] = served
        return served

    def fork(self, parent: int, child: int) -> None:
        super().fork(parent, child)
        self.settled[child] = self.settled[parent]

    def grow(self, sid: int, old_len: int, new_len: int, reserve: int) -> bool:
        # allocate_slots releases up to num_computed_tokens - num_in_flight_tokens before its capacity check:
        # the smallest layer length, to which release() has already let go.
        self.reqs[sid].num_in_flight_tokens = old_len - self.settled[sid]
        return super().grow(sid, old_len, new_len, reserve)

    def release(self, sid: int, settled: int) -> None:
        self.settled[sid] = settled
        self.mgr.remove_skipped_blocks(self.reqs[sid].request_id, settled)

    def free(self, sid: int) -> None:
        super().free(sid)
        del self.settled[sid]


class PagedKVCache(Frontend):
    """CONTRACT.md's cache, sliding window included, on vLLM v1's KVCacheManager; see the module docstring."""

    window_backend = _WindowBackend

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
    ) -> None:
        self._open((num_blocks, block_size, n_layers, n_kv_heads, d_head), prefix_caching, sliding_window)

    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> Any:
        if self.sliding_window is None:
            return vllm_v1._Backend(num_blocks, block_size, prefix_caching)
        return self.window_backend(num_blocks, block_size, prefix_caching, self.sliding_window)
