"""vllm_window.py with vLLM's served default: `prefix_cache_retention_interval=0` (vllm 0.33.0).

    PYTHONPATH=. ci/gate --impl engines.vllm_window_served --xfails engines/vllm_window_served.xfails

vLLM's `CacheConfig.prefix_cache_retention_interval` defaults to 0 (PR #52216) and every server runs
with it; vllm_window.py asks for None (dense) and conforms. This module is vllm_window.py, every call
the same, with a window group's `KVCacheConfig` built with retention 0, and so declares the profile
option that models it, `registration=replay-tail` (docs/CONTRACT.md, "Profiles"; oracle/registration.py).
What the window group registers is then vLLM's own `SlidingWindowManager.reachable_block_mask` under its
`UnitaryKVCacheCoordinator`: of a prompt of p tokens, the need = ceil((W-1)/B) blocks before block
(p-1)//B, once, when they are full (measured: nothing past the prompt). The adapter passes vLLM's
`shared_prefix_boundary` to the request as vLLM's scheduler does (the unitary coordinator returns 0).
Where that is less than the contract's rule, the differences are listed, strict, in
vllm_window_served.xfails, each with its vLLM issue and transcript (engines/README.md).
"""

from __future__ import annotations

from engines import vllm_window
from engines._frontend import OutOfBlocks, engine_calls

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

PROFILE = vllm_window.PROFILE + ",registration=replay-tail"


class _ServedBackend(vllm_window._WindowBackend):
    """vllm_window's backend with vLLM's served retention."""

    RETENTION = 0


class PagedKVCache(vllm_window.PagedKVCache):
    """vllm_window's cache with `prefix_cache_retention_interval=0`; see the module docstring."""

    window_backend = _ServedBackend
