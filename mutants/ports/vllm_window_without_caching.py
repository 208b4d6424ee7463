"""Issue 52's held-out window adapter: engines/vllm_window.py whose make_backend, with no window, builds vllm_v1's own
backend class with prefix caching off (add_seq serves 0 where vllm_v1 serves its hit). Its backend is vllm_v1's
class and it defines nothing beyond building the cache, so only its behaviour tells it from vllm_v1's:
ci/engines must not narrow its gate (meta_tests/test_narrowing.py)."""

from __future__ import annotations

from typing import Any

from engines import vllm_v1, vllm_window
from engines.vllm_window import PROFILE, OutOfBlocks, engine_calls

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]


class PagedKVCache(vllm_window.PagedKVCache):
    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> Any:
        if self.sliding_window is None:
            return vllm_v1._Backend(num_blocks, block_size, False)
        return self.window_backend(num_blocks, block_size, prefix_caching, self.sliding_window)
