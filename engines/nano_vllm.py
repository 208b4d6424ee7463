"""PagedKVCache on nano-vllm's own block manager (nano-vllm-fork 20260210 from PyPI, `pip install -e '.[engines]'`).

    PYTHONPATH=. ci/gate --impl engines.nano_vllm --xfails engines/nano_vllm.xfails

Which calls go to the engine (nanovllm/engine/block_manager.py and sequence.py, unmodified,
loaded from the installed wheel; the package `nanovllm/__init__.py`, which imports torch, never
runs):
- `BlockManager(N, B)`: its `Block`s, `free_block_ids` deque, `used_block_ids`,
  `hash_to_block_id` and `compute_hash` (xxh64 chain; tokens compared on a hit);
- `add_seq` with tokens: `BlockManager.allocate` decides the hit. It is run first on a deep
  copy of the manager with the whole prompt (what nano-vllm's scheduler does), to learn how
  many leading blocks it serves (`num_cached_tokens`); then on the real manager with a
  `Sequence` of exactly those blocks' tokens, which takes them (a reference, or off the free
  deque). The rest of the prompt gets its blocks as appends write it, as the contract says;
- a new block (an append past the table, a copy-on-write copy): `_allocate_block` of
  `free_block_ids[0]`, the two calls of `may_append`'s allocating branch (may_append itself
  is not called for this: it asserts the previous block is registered, which per-layer
  lengths break);
- registration: `may_append` on a view of the sequence that ends at the block's last position
  (its registering branch: `compute_hash` with the previous block's hash, `Block.update`,
  `hash_to_block_id[h] = id`), once every layer has filled the block;
- `free`: `BlockManager.deallocate` (tail first, each released block to the back of the deque).

The adapter's own (_frontend.py and below): argument checks, per-layer lengths, the K/V store,
fork (`ref_count += 1` on each of the parent's blocks, as allocate does on a hit on a used
block), copy on write (a new block as above, `ref_count -= 1` on the shared one, the table
entry replaced), and `stats()` (used = `used_block_ids`; cached = a block in the free deque that
`hash_to_block_id` still names by its `hash`; evictions = such a block taken by
`_allocate_block`, counted by the adapter).

Block ids are the engine's own, 0 .. N-1: nano-vllm reserves none.
"""

from __future__ import annotations

import copy
import os
import importlib.machinery
import sys
import types
from pathlib import Path
from typing import Any

from engines._frontend import Engine, Frontend, OutOfBlocks, engine_calls

__all__ = ["OutOfBlocks", "PagedKVCache", "PROFILE", "engine_calls"]

# Measured (tests/test_engines.py and README): one deque of unheld blocks in release order,
# its front taken; a key registered again moves to the newest block.
PROFILE = "allocation=any,reuse=release-order,duplicates=newest"


def _load() -> Any:
    """nanovllm.engine.block_manager from the installed wheel, without the package's __init__."""
    for entry in sys.path:
        root = Path(entry or ".") / "nanovllm"
        if (root / "engine" / "block_manager.py").is_file():
            break
    else:
        raise ImportError("nano-vllm is not installed (pip install -e '.[engines]': nano-vllm-fork)")
    for name, path in (("nanovllm", root), ("nanovllm.engine", root / "engine")):
        if name not in sys.modules:
            m = types.ModuleType(name)
            m.__path__ = [str(path)]
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(path)]
            m.__spec__ = spec
            sys.modules[name] = m
    import nanovllm.engine.block_manager as bm

    return bm


_bm = _load()
BlockManager = _bm.BlockManager
Sequence = _bm.Sequence
ROOT = Path(os.path.abspath(_bm.__file__)).parent.parent  # not resolved: a mutant mirror's symlinks stay in the mirror


def _sequence_class(block_size: int) -> type:
    """nano-vllm's Sequence with this cache's block size (a class attribute there) and empty prompts allowed."""

    class Seq(Sequence):  # type: ignore[misc, valid-type]
        def __init__(self, tokens: list[int]) -> None:
            super().__init__(list(tokens) or [0])
            if not tokens:
                self.token_ids: list[int] = []
                self.num_tokens = self.num_prompt_tokens = 0

    Seq.block_size = block_size
    return Seq


class _Backend:
    def __init__(self, num_blocks: int, block_size: int, caching: bool) -> None:
        self.bm = Engine(BlockManager(num_blocks, block_size))  # every call into it counted (engine_calls)
        self.B = block_size
        self.Seq = _sequence_class(block_size)
        self.caching = caching
        self.seqs: dict[int, Any] = {}
        self.registered: dict[int, int] = {}  # blocks of each sequence passed to may_append's registering branch
        self.evictions = 0

    def _keyed(self, block_id: int) -> bool:
        block = self.bm.blocks[block_id]
        return bool(block.hash != -1 and self.bm.hash_to_block_id.get(block.hash) == block_id)

    def add(self, sid: int, tokens: list[int]) -> int:
        seq = self.Seq(tokens)
        served = 0
        if self.caching and tokens:
            probe = copy.deepcopy(self.bm)
            trial = self.Seq(tokens)
            try:
                probe.allocate(trial)
            except (IndexError, AssertionError, ValueError, KeyError):
                pass  # the copy ran out of blocks for the misses; the hits before are counted
            hits = trial.num_cached_tokens // self.B
            if hits:
                taken = self.Seq(tokens[: hits * self.B])
                self.bm.allocate(taken)
                seq.block_table = taken.block_table
                served = taken.num_cached_tokens
        self.seqs[sid] = seq
        self.registered[sid] = served // self.B
        return int(served)

    def extend(self, sid: int, tokens: list[int]) -> None:
        seq = self.seqs[sid]
        seq.token_ids += tokens
        seq.num_tokens = len(seq.token_ids)

    def fork(self, parent: int, child: int) -> None:
        src = self.seqs[parent]
        seq = self.Seq(src.token_ids)
        seq.block_table = list(src.block_table)
        for block_id in seq.block_table:
            self.bm.blocks[block_id].ref_count += 1
        self.seqs[child] = seq
        self.registered[child] = self.registered[parent]

    def table(self, sid: int) -> list[int]:
        return list(self.seqs[sid].block_table)

    def holders(self, block: int) -> int:
        return int(self.bm.blocks[block].ref_count)

    def can_take(self, n: int) -> bool:
        return len(self.bm.free_block_ids) >= n

    def _new_block(self) -> int:
        block_id = self.bm.free_block_ids[0]
        if self._keyed(block_id):
            self.evictions += 1
        self.bm._allocate_block(block_id)
        return int(block_id)

    def grow(self, sid: int, old_len: int, new_len: int, reserve: int) -> bool:
        table = self.seqs[sid].block_table
        need = -(-new_len // self.B) - len(table)
        if max(need, 0) + reserve > len(self.bm.free_block_ids):
            return False
        for _ in range(need):
            table.append(self._new_block())
        return True

    def cow(self, sid: int, index: int) -> int:
        table = self.seqs[sid].block_table
        new = self._new_block()
        self.bm.blocks[table[index]].ref_count -= 1
        table[index] = new
        return new

    def register(self, sid: int, full_positions: int) -> None:
        seq = self.seqs[sid]
        for i in range(self.registered[sid], full_positions // self.B):
            view = self.Seq(seq.token_ids[: (i + 1) * self.B])
            view.block_table = seq.block_table[: i + 1]
            self.bm.may_append(view)
        self.registered[sid] = max(self.registered[sid], full_positions // self.B)

    def free(self, sid: int) -> None:
        self.bm.deallocate(self.seqs.pop(sid))
        del self.registered[sid]

    def stats(self) -> dict[str, int]:
        used = len(self.bm.used_block_ids)
        cached = sum(1 for b in self.bm.free_block_ids if self._keyed(b))
        total = len(self.bm.blocks)
        return {"free": total - used - cached, "used": used, "cached": cached, "evictions": self.evictions}

    def num_free(self) -> int:
        return len(self.bm.free_block_ids)


class PagedKVCache(Frontend):
    """CONTRACT.md's cache on nano-vllm's BlockManager; see the module docstring."""

    def make_backend(self, num_blocks: int, block_size: int, prefix_caching: bool) -> _Backend:
        return _Backend(num_blocks, block_size, prefix_caching)
