"""vLLM 0.33.0's worker-side page tables, run on a CPU: what its attention kernels read.

Each function below is vLLM's own code, its source read from the installed wheel and compiled
alone (the modules around it import FlashInfer, CUDA ops and the model config, none of which
this arithmetic uses):

- `AttentionGroup.map_to_kernel_block_table` (vllm/v1/worker/utils.py): a manager block table
  split into kernel blocks (block b is kernel blocks b * (B / P) + j), run with torch's CPU build;
- `FlashInferMetadataBuilder._compute_flashinfer_kv_metadata`
  (vllm/v1/attention/backends/flashinfer.py): `paged_kv_indptr` (a cumulative sum),
  `paged_kv_indices` and `paged_kv_last_page_len`, with vLLM's `CpuGpuBuffer` (vllm/v1/utils.py);
- the Triton kernels it and the block table launch, `_copy_page_indices_kernel` and
  `ComputeSlotMappingKernel.kernel` (vllm/v1/worker/block_table.py), run by Triton's interpreter
  (`TRITON_INTERPRET=1`, set by `load` before Triton is imported).

Restated, not run: the one line of `FlashInferMetadataBuilder.build` that counts a request's pages,
`(seq_lens + page_size - 1) // page_size`, and the launch of the slot-mapping kernel (one program per
request and one more that pads, as `ComputeSlotMappingKernel.__call__` launches it).

Needs torch (`pip install torch==2.13.0`: a CPU build) and triton (its interpreter runs on a CPU);
`load` raises ImportError naming what is missing.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import numpy as np
from numpy.typing import NDArray

I32 = NDArray[np.int32]

_loaded: types.SimpleNamespace | None = None


@contextlib.contextmanager
def _real_torch() -> Iterator[None]:
    """The real torch as `torch` in sys.modules while vLLM's worker code runs (and Triton imports what it needs).

    engines/vllm_engine.py puts a stand-in `torch` there for the block manager, which only names its dtypes; it
    goes back after, so the manager runs as it always does.
    """
    stand_in = sys.modules.get("torch")
    if _loaded is not None:  # the real torch, imported by load()
        sys.modules["torch"] = _loaded.torch
    elif stand_in is not None and not hasattr(stand_in, "from_numpy"):
        del sys.modules["torch"]  # the import below finds the installed torch
    try:
        yield
    finally:
        if stand_in is not None:
            sys.modules["torch"] = stand_in


def _wheel() -> Path:
    """The installed vllm package's folder, found on sys.path without importing it."""
    for entry in sys.path:
        folder = Path(entry or ".") / "vllm"
        if (folder / "v1" / "worker" / "utils.py").is_file():
            return folder
    raise ImportError("vllm is not installed (pip install --no-deps vllm==0.33.0)")


def _definition(path: Path, name: str) -> ast.stmt:
    """The top-level function `name`, or `Class.method`, of the module at `path`, decorators and all."""
    tree = ast.parse(path.read_text(), str(path))
    owner, _, member = name.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == owner)
        body = cls.body
    return next(n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == member)


def _compile(path: Path, name: str, namespace: dict[str, Any], *, drop_decorators: bool = False) -> Any:
    """vLLM's definition `name` from `path`, compiled alone in `namespace` (its file and line numbers kept)."""
    node = _definition(path, name)
    if drop_decorators and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        node.decorator_list = [d for d in node.decorator_list if not _is_staticmethod(d)]
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name.rpartition(".")[2]]


def _is_staticmethod(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


F = TypeVar("F", bound=Callable[..., Any])


def _on_real_torch(function: F) -> F:
    """`function` run with the real torch in sys.modules (torch looks itself up there as it runs)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        load()
        with _real_torch():
            return function(*args, **kwargs)

    return run  # type: ignore[return-value]


def load() -> types.SimpleNamespace:
    """vLLM's functions above, compiled once; Triton's interpreter switched on before Triton is imported."""
    global _loaded
    if _loaded is not None:
        return _loaded
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise ImportError("triton was imported without TRITON_INTERPRET=1: its kernels cannot run on this CPU")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        with _real_torch():
            import torch
            import triton
            import triton.language as tl
            import triton.runtime.interpreter  # noqa: F401 - imported now, with the real torch in sys.modules
    except ImportError as exc:
        raise ImportError(f"{exc.name} is not installed (pip install torch==2.13.0 triton)") from exc
    wheel = _wheel()
    worker, backends = wheel / "v1" / "worker", wheel / "v1" / "attention" / "backends"
    common = {"torch": torch, "np": np, "triton": triton, "tl": tl, "PIN_MEMORY": False}
    buffer = _compile(wheel / "v1" / "utils.py", "CpuGpuBuffer", dict(common))
    copy_pages = _compile(backends / "flashinfer.py", "_copy_page_indices_kernel", dict(common))
    metadata = _compile(
        backends / "flashinfer.py",
        "FlashInferMetadataBuilder._compute_flashinfer_kv_metadata",
        dict(common, _copy_page_indices_kernel=copy_pages),
    )
    kernel_table = _compile(worker / "utils.py", "AttentionGroup.map_to_kernel_block_table", dict(common))
    slots = _compile(worker / "block_table.py", "ComputeSlotMappingKernel.kernel", dict(common), drop_decorators=True)
    _loaded = types.SimpleNamespace(
        torch=torch, CpuGpuBuffer=buffer, metadata=metadata, kernel_table=kernel_table, slot_kernel=slots
    )
    return _loaded


def _rows(tables: Sequence[Sequence[int]], width: int) -> Any:
    """The block tables as vLLM's worker holds them: an int32 tensor, one row a request, unused entries 0."""
    v = load()
    out = np.zeros((len(tables), max(width, 1)), dtype=np.int32)
    for row, table in zip(out, tables):
        row[: len(table)] = table
    return v.torch.from_numpy(out)


@_on_real_torch
def kernel_block_table(tables: Sequence[Sequence[int]], block_size: int, page_size: int) -> Any:
    """vLLM's `map_to_kernel_block_table` on these manager tables (the same tensor when P == B)."""
    v = load()
    rows = _rows(tables, max((len(t) for t in tables), default=0))
    if page_size == block_size:
        return rows
    per = block_size // page_size
    group = types.SimpleNamespace(
        kernel_block_size=page_size,
        kv_cache_spec=types.SimpleNamespace(block_size=block_size),
        kernel_block_table=v.torch.zeros((1, rows.shape[0], rows.shape[1] * per), dtype=v.torch.int32),
        kernel_block_offsets=v.torch.arange(per, dtype=v.torch.int32),
        kernel_block_stride=0,
    )
    return v.kernel_table(group, rows)


@_on_real_torch
def flashinfer_page_table(
    tables: Sequence[Sequence[int]], seq_lens: Sequence[int], block_size: int, page_size: int
) -> tuple[I32, I32, I32]:
    """(indptr, indices, last_page_len) as vLLM's FlashInfer backend builds them for one KV cache group."""
    v = load()
    torch, n = v.torch, len(tables)
    lens = np.asarray(seq_lens, dtype=np.int32)
    table = kernel_block_table(tables, block_size, page_size)
    pages = (lens + (page_size - 1)) // page_size  # restated: FlashInferMetadataBuilder.build
    cpu = torch.device("cpu")
    builder = types.SimpleNamespace(
        paged_kv_indptr=v.CpuGpuBuffer(n + 1, dtype=torch.int32, device=cpu),
        paged_kv_indices=torch.zeros(int(pages.sum()) + 1, dtype=torch.int32),
        paged_kv_last_page_len=v.CpuGpuBuffer(max(n, 1), dtype=torch.int32, device=cpu),
    )
    indices = v.metadata(builder, pages, lens, table, n, page_size)
    indptr = builder.paged_kv_indptr.np[: n + 1].copy()
    last = builder.paged_kv_last_page_len.np[:n].copy()
    return indptr, indices.numpy().astype(np.int32), last


@_on_real_torch
def slot_mapping(table: Sequence[int], positions: Sequence[int], block_size: int, padded: int = 0) -> NDArray[np.int64]:
    """vLLM's slot-mapping kernel for one request's positions, `padded` more slots after them (PAD_SLOT_ID, -1)."""
    v = load()
    torch = v.torch
    count = len(positions)
    start_loc = torch.tensor([0, count], dtype=torch.int32)
    pos = torch.tensor(list(positions), dtype=torch.int64)
    rows = _rows([table], len(table))
    out = torch.zeros(count + padded, dtype=torch.int64)
    kernel: Any = v.slot_kernel  # a triton.jit function: launched as kernel[grid](...)
    kernel[(2,)](  # one program for the request, one that pads (ComputeSlotMappingKernel.__call__'s grid)
        count, count + padded, start_loc, pos, rows, rows.stride(0), out,
        KV_CACHE_BLOCK_SIZE=block_size, TOTAL_CP_WORLD_SIZE=1, TOTAL_CP_RANK=0,
        CP_KV_CACHE_INTERLEAVE_SIZE=1, PAD_ID=-1, BLOCK_SIZE=1024,
    )
    result: NDArray[np.int64] = out.numpy().copy()
    return result
