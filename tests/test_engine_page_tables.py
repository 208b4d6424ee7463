"""vLLM's worker-side page tables (engines/vllm_worker.py: its own code, on a CPU) against the contract's.

A random session runs on a vLLM adapter and the oracle in lockstep (tests/test_engines.py's `session`, which
compares every observable, block tables up to the renaming); after each step, for every layer, P = B and the
largest P below B, vLLM's FlashInfer metadata over the adapter's tables (`map_to_kernel_block_table`, then
`_compute_flashinfer_kv_metadata`) is compared with the oracle's `page_table`, ids through the renaming, and
vLLM's slot-mapping kernel with the oracle's `slot_mapping`, for one sequence and layer a step.

What vLLM exports is the contract's, but for one measured difference: for a sliding-window layer it lists
every page from position 0, a released entry as its null block's pages, and leaves the window to the kernel's
`window_left`; the contract's pages start at the first page holding a shown position. So a sequence's expected
pages are the oracle's, after the pages of the positions before its first shown one (none for full attention).
A released position's slot is in the null block (the contract's -1). vLLM's ids are the adapter's plus one
(block 0 is its null block, shown -1): the tables go in so, and its pages come out less B / P.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from oracle import ModelKVCache
from oracle.id_renaming import BlockNames
from tests.assertions import assert_equal
from tests.kernel_pages import page_sizes
from tests.test_engines import WANTED, WINDOWED, adapter, session

VLLM = ("vllm_v1", "vllm_window", "vllm_window_served", "vllm_hybrid", "vllm_hybrid_served")  # nano-vllm's worker is not ours to run
GATED = [name for name in VLLM if name in WANTED]
if not GATED:  # one skip for the module: nano-vllm, or no vLLM adapter under test
    pytest.skip("vLLM's worker page tables: run with --impl=engines.NAME, NAME a vLLM adapter", allow_module_level=True)


def worker() -> Any:
    """engines/vllm_worker.py, loaded (vLLM's functions compiled); skipped, saying why, without torch or triton."""
    from engines import vllm_worker

    try:
        vllm_worker.load()
    except ImportError as exc:
        pytest.skip(f"vLLM's worker code needs torch and triton (ci/engines installs them): {exc}")
    return vllm_worker


def expected_pages(model: ModelKVCache, port: dict[int, int], sid: int, layer: int, size: int, want: list[int]) -> list[int]:
    """The pages vLLM should list: those of the positions before the first one `gather` shows (a released entry
    the null block's, -1 in the adapter's ids), then the contract's (`want`, the oracle's through the renaming)."""
    table = model.block_table(sid, layer).tolist()
    r = model.block_size // size
    before = [port.get(table[q // r], -1) * r + q % r for q in range(model.shown_from(sid, layer) // size)]
    return before + want


def checker(vw: Any, rng: random.Random) -> Any:
    def check(cache: Any, model: ModelKVCache, names: BlockNames, what: str) -> None:
        seqs = sorted(model.tables)
        if not seqs:
            return
        port = {oracle: mine for mine, oracle in names.bound().items()}
        bs = model.block_size
        for layer in range(model.n_layers):
            tables = [[b + 1 for b in cache.block_table(s, layer).tolist()] for s in seqs]  # vLLM's own ids
            lens = [cache.seq_len(s, layer) for s in seqs]
            for size in page_sizes(bs):
                p = bs if size is None else size
                r = bs // p
                call = f"vLLM's FlashInfer metadata for {seqs}, layer {layer}, page size {p}, {what}"
                indptr, indices, last = vw.flashinfer_page_table(tables, lens, bs, p)
                want_indptr, want_indices, want_last = model.page_table(seqs, layer, size)
                assert_equal("paged_kv_last_page_len", last.tolist(), want_last.tolist(), call)
                for i, s in enumerate(seqs):
                    got = [int(x) - r for x in indices[indptr[i] : indptr[i + 1]]]
                    mine = [port[x // r] * r + x % r for x in want_indices[want_indptr[i] : want_indptr[i + 1]].tolist()]
                    assert_equal(f"paged_kv_indices of sequence {s}", got, expected_pages(model, port, s, layer, p, mine), call)
        sid, layer = rng.choice(seqs), rng.randrange(model.n_layers)
        n = model.seq_len(sid, layer)
        table = [b + 1 for b in cache.block_table(sid, layer).tolist()]
        got = vw.slot_mapping(table, range(n), bs, padded=2).tolist()  # in vLLM's ids, two padding slots after
        want = model.slot_mapping(sid, layer, 0, n).tolist()
        # In vLLM's ids: the oracle's slot through the renaming, plus one block; a released position's slot in the
        # null block (block 0); each padding slot PAD_SLOT_ID, -1.
        mine = [pos % bs if w == -1 else (port[w // bs] + 1) * bs + w % bs for pos, w in enumerate(want)]
        assert_equal(f"slot_mapping of sequence {sid}, layer {layer}", got, mine + [-1, -1], f"vLLM's slot-mapping kernel, {what}")

    return check


@pytest.mark.parametrize("name", [pytest.param(n, marks=WINDOWED) if "window" in n else n for n in GATED])
@pytest.mark.parametrize("seed", range(3))
def test_vllm_worker_page_tables_are_the_contracts(name: str, seed: int) -> None:
    """vLLM's kernel inputs from the engine's tables: the contract's, but for a window's pages before it."""
    mod = adapter(name)
    vw = worker()
    window, hybrid = name in ("vllm_window", "vllm_window_served"), name.startswith("vllm_hybrid")
    # The served adapters' prefix caching differs from the oracle's (their xfails list it); their tables do not
    # depend on it, so their sessions run without it.
    prefix = seed % 2 == 0 and not name.endswith("_served")
    session(mod, seed, prefix=prefix, steps=40, window=window, hybrid=hybrid, after=checker(vw, random.Random(seed)))
