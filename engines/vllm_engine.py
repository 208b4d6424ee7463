"""Load vLLM v1's block manager from the installed wheel on a CPU with no torch.

Every vLLM core module imports torch at import time, mostly through package `__init__`s. So
the packages `vllm`, `vllm.distributed`, `vllm.utils`, `vllm.v1`, `vllm.v1.core`,
`vllm.v1.attention`, `vllm.v1.attention.backends` are made as empty packages pointing at the
installed folders (their `__init__` never runs), and these stand-ins replace modules the
manager imports but does not use here (a text-only request, one full-attention group, no
KV connector, no events, no metrics):

- `torch`: an empty module with placeholder dtype classes (only named in annotations and
  dataclass fields);
- `vllm.config`, `vllm.multimodal.utils`, `vllm.v1.utils`, `vllm.v1.metrics.stats`,
  `vllm.v1.hisparse.block_pool`, `vllm.utils.torch_utils`, `vllm.distributed.kv_events`,
  `vllm.platforms`: any name they are asked for is an inert placeholder class;
- `vllm.v1.request`: `RequestStatus` (WAITING, RUNNING, PREEMPTED) and a placeholder `Request`.

Everything else is the wheel's own code, imported normally: kv_cache_manager.py,
kv_cache_coordinator.py, single_type_kv_cache_manager.py, block_pool.py, kv_cache_utils.py
(the free queue, KVCacheBlock, the block hasher), kv_cache_metrics.py, kv_cache_interface.py,
utils/hashing.py (with the real cbor2 and xxhash), utils/math_utils.py, logger.py, envs.py.

`load()` finds the wheel on sys.path (a mutant copy put first on PYTHONPATH wins) and returns
a namespace with what the adapter needs. It must run before anything else imports `vllm`.
"""

from __future__ import annotations

import enum
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

STUBS = (
    "vllm.config",
    "vllm.multimodal",
    "vllm.multimodal.utils",
    "vllm.v1.utils",
    "vllm.v1.metrics",
    "vllm.v1.metrics.stats",
    "vllm.v1.hisparse",
    "vllm.v1.hisparse.block_pool",
    "vllm.utils.torch_utils",
)
PACKAGES = ("vllm", "vllm.distributed", "vllm.utils", "vllm.v1", "vllm.v1.core", "vllm.v1.attention", "vllm.v1.attention.backends")

_loaded: types.SimpleNamespace | None = None


class _Inert:
    """A placeholder: constructible with anything, every attribute another placeholder."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> "_Inert":
        return _Inert()

    def __getattr__(self, name: str) -> "_Inert":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert()


def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)

    def placeholder(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (_Inert,), {})
        setattr(m, attr, cls)
        return cls

    m.__getattr__ = placeholder  # type: ignore[method-assign]
    sys.modules[name] = m
    return m


def _package(name: str, path: Path) -> None:
    m = types.ModuleType(name)
    m.__path__ = [str(path)]
    m.__package__ = name
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(path)]
    m.__spec__ = spec
    sys.modules[name] = m


def wheel_root() -> Path:
    """The installed `vllm` folder: the first on sys.path that holds vllm/v1/core/block_pool.py."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "vllm"
        if (candidate / "v1" / "core" / "block_pool.py").is_file():
            return candidate.resolve()
    raise ImportError("vllm is not installed (pip install -e '.[engines]'; vllm goes in with --no-deps)")


def load() -> types.SimpleNamespace:
    global _loaded
    if _loaded is not None:
        return _loaded
    if "vllm" in sys.modules and not hasattr(sys.modules["vllm"], "__path__"):
        raise ImportError("a non-package vllm is already imported")
    root = wheel_root()
    if "torch" not in sys.modules:
        torch = types.ModuleType("torch")
        for name in ("dtype", "Tensor", "device", "float16", "bfloat16", "float32", "int32", "int64", "uint8", "int8",
                     "float8_e4m3fn", "float8_e5m2", "Size", "Generator"):
            setattr(torch, name, type(name, (), {}))
        sys.modules["torch"] = torch
    for name in PACKAGES:
        _package(name, root.joinpath(*name.split(".")[1:]))
    for name in STUBS:
        _module(name)
    _module("vllm.platforms", current_platform=_Inert())
    _module("vllm.distributed.kv_events", MEDIUM_GPU="GPU", MEDIUM_CPU="CPU", MEDIUM_STORAGE="STORAGE")

    class RequestStatus(enum.IntEnum):
        WAITING = enum.auto()
        RUNNING = enum.auto()
        PREEMPTED = enum.auto()

    _module("vllm.v1.request", RequestStatus=RequestStatus)

    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, SlidingWindowSpec

    hash_fn = get_hash_fn_by_name("sha256")  # CacheConfig.prefix_caching_hash_algo's default
    kv_cache_utils.init_none_hash(hash_fn)

    def make_manager(num_blocks: int, block_size: int, caching: bool, window: int | None = None,
                     retention: int | None = None, windows: list[int | None] | None = None) -> Any:
        # One group: full attention, or with a window one SlidingWindowSpec (a SlidingWindowManager under the
        # coordinator). KVCacheConfig's prefix_cache_retention_interval: None (dense registration, every full
        # block), or vllm_window_served.py's 0, the served default (only what hits at replay boundaries and
        # junctions need; vLLM refuses any value but None for a full-attention group).
        # `windows` (vllm_hybrid.py): one group a window, in that order, None a FullAttentionSpec group; with
        # two or more, the manager's coordinator is the HybridKVCacheCoordinator.
        dtype = sys.modules["torch"].float16

        def spec(w: int | None) -> Any:
            if w is None:
                return FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=dtype)
            return SlidingWindowSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=dtype, sliding_window=w)

        groups = [KVCacheGroupSpec([f"layer.{g}"], spec(w)) for g, w in enumerate([window] if windows is None else windows)]
        config = KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[], kv_cache_groups=groups,
                               prefix_cache_retention_interval=retention)
        return KVCacheManager(
            config, max_model_len=2**62, scheduler_block_size=block_size, hash_block_size=block_size, enable_caching=caching
        )

    _loaded = types.SimpleNamespace(
        root=root,
        RequestStatus=RequestStatus,
        make_manager=make_manager,
        get_request_block_hasher=kv_cache_utils.get_request_block_hasher,
        hash_fn=hash_fn,
    )
    return _loaded
