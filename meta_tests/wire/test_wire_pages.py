"""The page tables a kernel reads, on the wire (docs/PROTOCOL.md: `page_table`, `slot_mapping`, `kv_pages`, the
capability `page_tables`): a driver-backed cache answers as the cache in process, bit for bit; a driver without
the capability refuses the verbs; the recorder writes the defaults out; under allocation=any a replay renames
the blocks pages and slots name and asks for kv_pages at the port's own pages. Independent of --impl."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import paged
from oracle.id_renaming import BlockNames
from testkit.chunks import make_chunk
from wire.codec import PAGE_TABLES
from wire.record import Recorder
from wire.remote import ExecImpl
from wire.server import Dispatcher
from wire.transcript import pages_difference, parse, replay

pytestmark = pytest.mark.oracle  # tests of the suite's own machinery, like the oracle's


def session(cache_type: Any) -> Any:
    """Two sequences on a hybrid cache (layer 1 a window of 3, B = 4): a fork, its copy on write, a release."""
    c = cache_type(12, 4, 2, 2, 2, layer_windows=(None, 3))
    c.add_seq(0)
    for layer in range(2):
        c.append(0, layer, *make_chunk(2, 6, 2, 10 + layer, "float16"))
    c.fork(0, 1)
    for layer in range(2):
        c.append(1, layer, *make_chunk(2, 3, 2, 20 + layer, "float16"))
    return c


def test_a_driver_backed_cache_exports_what_the_cache_in_process_does() -> None:
    impl = ExecImpl(f"exec:{sys.executable} -m wire.driver")
    try:
        assert PAGE_TABLES in impl.capabilities
        remote, local = session(impl.PagedKVCache), session(paged.PagedKVCache)
        for layer in range(2):
            for kwargs in ({}, {"page_size": 4}, {"page_size": 2}, {"page_size": 1}):
                got, want = remote.page_table([1, 0], layer, **kwargs), local.page_table([1, 0], layer, **kwargs)
                for g, w in zip(got, want, strict=True):
                    assert g.dtype == w.dtype == np.int32 and g.tolist() == w.tolist(), (layer, kwargs)
                k, v = remote.kv_pages(layer, **kwargs)
                for g, w in zip((k, v), local.kv_pages(layer, **kwargs), strict=True):
                    assert g.shape == w.shape and np.array_equal(g.view(np.uint16), w.view(np.uint16)), (layer, kwargs)
            for seq in (0, 1):
                count = local.seq_len(seq, layer) - 1
                got_slots, want_slots = remote.slot_mapping(seq, layer, 1, count), local.slot_mapping(seq, layer, 1, count)
                assert got_slots.dtype == np.int64 and got_slots.tolist() == want_slots.tolist()
        assert -1 in remote.slot_mapping(1, 1, 0, 9).tolist(), "layer 1's window released a block"
        for call, args, error in (
            (remote.page_table, ([0, 0], 0), ValueError), (remote.page_table, ([7], 0), KeyError),
            (remote.page_table, ([0], 0, 3), ValueError), (remote.slot_mapping, (0, 0, 5, 5), ValueError),
            (remote.kv_pages, (0, 0), ValueError), (remote.kv_pages, (2,), ValueError),
        ):
            with pytest.raises(error):
                call(*args)
    finally:
        impl.stop()


class NoTables:
    """A cache with none of the three calls: its driver does not announce page_tables."""

    def __init__(self, *sizes: int) -> None:
        self.sizes = sizes


def test_a_driver_without_the_capability_answers_err_protocol_to_the_verbs() -> None:
    d = Dispatcher(SimpleNamespace(PagedKVCache=NoTables, OutOfBlocks=paged.OutOfBlocks), "plain")
    assert d.handle("hello 1")[0] == "ok 1 plain"
    assert d.handle("new 4 2 1 1 1")[0] == "ok 0"
    for line in ("page_table 0 0 2 0", "slot_mapping 0 0 0 0 1", "kv_pages 0 0 2 0 1", "page_table 0"):
        assert d.handle(line)[0].startswith("err protocol "), line


def test_kv_pages_answers_a_range_of_the_pool_and_refuses_one_outside_it() -> None:
    d = Dispatcher(paged, "paged")
    d.handle("hello 1")
    d.handle("new 3 2 1 1 1")
    d.handle("add_seq 0 0")
    d.handle("append 0 0 0 1,3,1 1,3,1 3c0040004200 bc00c000c200")
    assert d.handle("page_table 0 0 1 0")[0] == "ok 0,3 0,1,2 1"
    assert d.handle("kv_pages 0 0 1 1 2")[0] == "ok 40004200 c000c200", "pages 1 and 2: positions 1 and 2"
    assert d.handle("kv_pages 0 0 2 1 0")[0] == "ok - -"
    for line in ("kv_pages 0 0 2 2 2", "kv_pages 0 0 2 -1 1", "kv_pages 0 0 2 0 -1", "kv_pages 0 0 3 0 1"):
        assert d.handle(line)[0].startswith("err invalid_argument "), line


def test_the_recorder_writes_the_defaults_out() -> None:
    recorder = Recorder()
    c = recorder.wrap(paged).PagedKVCache(5, 4, 1, 1, 1)
    c.add_seq(0)
    c.page_table([0], 0)
    c.page_table([0], 0, page_size=2)
    c.kv_pages(0)
    c.kv_pages(0, 2)
    c.slot_mapping(0, 0, 0, 0)
    assert [" ".join([name, *fields]) for _, name, fields in recorder.calls[2:]] == [  # type: ignore[misc]
        "page_table 0 4 0", "page_table 0 2 0", "kv_pages 0 4 0 5", "kv_pages 0 2 0 10", "slot_mapping 0 0 0 0",
    ]


def test_renamed_pages_and_slots_match_by_block_and_place() -> None:
    """B = 4, P = 2: the oracle's pages 2, 3, 0 are block 1's halves and block 0's first; here block 1 is 5, block 0 is 3."""
    names = BlockNames(8)
    request, want = "page_table 0 0 2 0", "ok 0,3 2,3,0 1"
    assert pages_difference(request, want, "ok 0,3 10,11,6 1", 4, names) is None
    assert pages_difference("slot_mapping 0 0 0 0 2", "ok 4,-1", "ok 20,-1", 4, names) is None
    assert "should be 5" in str(pages_difference("slot_mapping 0 0 0 0 2", "ok 4,-1", "ok 12,-1", 4, names))
    assert "its place in its block" in str(pages_difference(request, want, "ok 0,3 11,10,6 1", 4, BlockNames(8)))
    assert "last_page_len=2, but should be 1" in str(pages_difference(request, want, "ok 0,3 10,11,6 2", 4, BlockNames(8)))
    assert "should be -1" in str(pages_difference("slot_mapping 0 0 0 0 2", "ok 4,-1", "ok 20,21", 4, BlockNames(8)))


def test_a_renamed_replay_asks_for_kv_pages_at_the_ports_pages() -> None:
    t = parse("> new 8 4 1 1 1\n< ok 0\n> page_table 0 0 2 0\n< ok 0,2 2,3 2\n> kv_pages 0 0 2 2 2\n< ok 3c004000 bc00c000\n")
    sent: list[str] = []
    answers = iter(["ok 0", "ok 0,2 10,11 2", "ok 3c00 bc00", "ok 4000 c000"])

    def send(line: str) -> str:
        sent.append(line)
        return next(answers)

    assert replay(t, send, exact_ids=False) is None
    assert sent[2:] == ["kv_pages 0 0 2 10 1", "kv_pages 0 0 2 11 1"]
    unbound = parse("> new 8 4 1 1 1\n< ok 0\n> kv_pages 0 0 2 2 1\n< ok 3c00 bc00\n")
    mismatch = replay(unbound, lambda line: "ok 0", exact_ids=False)
    assert mismatch is not None and "which no answer before named" in mismatch.why
