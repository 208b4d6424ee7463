"""vllm_hybrid.py with vLLM's served default: `prefix_cache_retention_interval=0` (vllm 0.33.0).

    PYTHONPATH=. ci/gate --impl engines.vllm_hybrid_served --xfails engines/vllm_hybrid_served.xfails

vllm_hybrid.py, every call the same, with the `KVCacheConfig` built with retention 0, as every vLLM server
runs (PR #52216), and so the profile option that models it, `registration=replay-tail` (docs/CONTRACT.md,
"Profiles"; oracle/registration.py). What each group registers is then vLLM's own: a full-attention group
every full block (vLLM's `reachable_block_mask` is None for it, measured), a window group the run of
need = ceil((W-1)/B) blocks below each reachable boundary (`SlidingWindowManager.reachable_block_mask`):
the replay boundary p - 1 and the junction, `request.shared_prefix_boundary`, which `get_computed_blocks`
returns under the `HybridKVCacheCoordinator` (the full-attention group's hit when it is longer than the
common one) and the adapter sets on the request as vLLM's scheduler does. Where that is less than the
contract's rule, the differences are listed, strict, in vllm_hybrid_served.xfails (engines/README.md).
"""

from __future__ import annotations

from engines import vllm_hybrid
from engines._frontend import OutOfBlocks, engine_calls

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

PROFILE = vllm_hybrid.PROFILE + ",registration=replay-tail"


class _ServedBackend(vllm_hybrid._HybridBackend):
    """vllm_hybrid's backend with vLLM's served retention."""

    RETENTION = 0


class PagedKVCache(vllm_hybrid.PagedKVCache):
    """vllm_hybrid's cache with `prefix_cache_retention_interval=0`; see the module docstring."""

    hybrid_backend = _ServedBackend
