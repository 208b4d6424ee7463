"""The wire itself: the codec's round trips, the server's answers, and the client's verdict on a
driver that crashes, hangs, prints garbage or answers out of protocol (a clear DriverError that
names the request, within the timeout; the suite never hangs). Independent of --impl."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle.as_impl
from oracle.profile import Profile
from wire.process import DriverError, DriverProcess, RefusedAhead
from wire.remote import ExecImpl
from wire.replay import Replayer, replay_fresh
from oracle.id_renaming import BlockNames
from wire.codec import ProtocolError, call_fields, format_list, format_payload, new_fields, parse_int, parse_list, parse_payload
from wire.server import Dispatcher
from wire.transcript import matches, parse, renumbered, table_difference

pytestmark = pytest.mark.oracle  # tests of the suite's own machinery, like the oracle's

DRIVERS = Path(__file__).resolve().parents[2] / "mutants" / "drivers"  # the misbehaving drivers


@given(bits=st.lists(st.integers(0, 0xFFFF), max_size=24), heads=st.integers(1, 3))
def test_payloads_round_trip_every_float16_bit_pattern(bits: list[int], heads: int) -> None:
    values = np.array(bits * heads, dtype=np.uint16).view(np.float16).reshape(heads, len(bits), 1)
    text = format_payload(values)
    assert text == ("-" if not bits else "".join(f"{b:04x}" for b in bits * heads)), "4 hex digits a value, most significant first"
    assert np.array_equal(parse_payload(text, values.shape).view(np.uint16), values.view(np.uint16))


def test_fields_by_hand() -> None:
    assert format_payload(np.array([1.0, -2.0, -0.0], dtype=np.float16)) == "3c00c0008000"
    assert (format_list([]), format_list([0, 12, -3])) == ("-", "0,12,-3")
    assert parse_list("-") == [] and parse_int(str(-(2**63))) == -(2**63)
    for bad in ("1.0", "", "+5", "0x10", str(2**63), "1 2"):
        with pytest.raises(ProtocolError):
            parse_int(bad)
    with pytest.raises(ProtocolError):
        parse_payload("3c00", (2,))
    assert call_fields("seq_len", 5) == ["5", "0"], "the default layer travels explicitly"
    with pytest.raises(TypeError):
        call_fields("add_seq", True)


def test_the_server_answers_by_kind() -> None:
    d = Dispatcher(oracle.as_impl, "oracle")
    assert d.handle("new 4 2 1 1 1")[0].startswith("err protocol"), "hello comes first"
    assert d.handle("hello 1")[0] == "ok 1 oracle prefix_caching sliding_window hybrid page_tables"
    answers = [d.handle(line)[0] for line in (
        "new 1 1 1 1 1", "add_seq 0 3", "append 0 3 0 1,1,1 1,1,1 3c00 3c00", "append 0 3 0 1,1,1 1,1,1 3c00 3c00",
        "gather 0 9 0", "fork 0 3 3", "new 0 1 1 1 1", "stats 7", "frobnicate 0", "append 0 3 0 1,1,1 1,1,1 3c 3c00",
    )]
    assert [a.split(" ")[:2] for a in answers] == [
        ["ok", "0"], ["ok", "0"], ["ok"], ["err", "out_of_blocks"], ["err", "unknown_sequence"],
        ["err", "invalid_argument"], ["err", "invalid_argument"], ["err", "protocol"], ["err", "protocol"], ["err", "protocol"],
    ]
    assert d.handle("quit") == ("ok", True)


class Windowed:
    """A constructor that takes both options, and keeps what it was given (the server's reading of `new`)."""

    def __init__(self, *sizes: int, prefix_caching: bool = False, sliding_window: int | None = None) -> None:
        if sliding_window is not None and not 2 <= sliding_window <= 2**31 - 1:
            raise ValueError(f"sliding_window must be 2 .. 2^31 - 1, got {sliding_window}")
        self.made = (sizes, prefix_caching, sliding_window)


WINDOWED = SimpleNamespace(PagedKVCache=Windowed, OutOfBlocks=RuntimeError)


def greeted(module: Any) -> Dispatcher:
    d = Dispatcher(module, "fake")
    d.handle("hello 1")
    return d


def test_new_takes_its_options_in_any_order_each_once() -> None:
    d = greeted(WINDOWED)
    assert d.caps == ["prefix_caching", "sliding_window"], "both announced: the constructor takes both keywords"
    for line, made in (
        ("new 4 2 1 1 1 sliding_window=3", ((4, 2, 1, 1, 1), False, 3)),
        ("new 4 2 1 1 1 prefix_caching sliding_window=2", ((4, 2, 1, 1, 1), True, 2)),
        ("new 4 2 1 1 1 sliding_window=5 prefix_caching", ((4, 2, 1, 1, 1), True, 5)),
        ("new 4 2 1 1 1 sliding_window=007", ((4, 2, 1, 1, 1), False, 7)),
        ("new 4 2 1 1 1", ((4, 2, 1, 1, 1), False, None)),
    ):
        handle = len(d.caches)
        assert d.handle(line)[0] == f"ok {handle}", line
        assert d.caches[handle].made == made, line


@pytest.mark.parametrize(
    "option",
    [
        "sliding_window", "sliding_window=", "sliding_window=x", "sliding_window=+3", "sliding_window=3.0", "sliding_window=0x3",
        "sliding_window=3=4", "sliding_window= 3", f"sliding_window={2**63}", "Sliding_window=3", "window=3", "prefix_caching=1",
        "sliding_window=3 sliding_window=3", "sliding_window=3 sliding_window=4", "prefix_caching prefix_caching",
        "prefix_caching sliding_window=3 prefix_caching", "sliding_window=3 prefix_caching extra",
    ],
)
def test_a_malformed_or_repeated_option_of_new_is_a_protocol_error(option: str) -> None:
    d = greeted(WINDOWED)
    answer = d.handle(f"new 4 2 1 1 1 {option}")[0]
    assert answer.startswith("err protocol "), (option, answer)
    assert d.caches == [] and d.handle("new 4 2 1 1 1")[0] == "ok 0", "no handle taken"


def test_a_window_out_of_range_reaches_the_constructor() -> None:
    """W that parses is the contract's to judge: the constructor's error crosses as its kind."""
    d = greeted(WINDOWED)
    for w in ("1", "0", "-5", "-0", str(2**31), str(2**63 - 1), str(-(2**63))):
        assert d.handle(f"new 4 2 1 1 1 sliding_window={w}")[0].startswith("err invalid_argument "), w
    assert d.caches == []


def test_a_driver_without_the_capability_refuses_the_option() -> None:
    class Plain:
        def __init__(self, *sizes: int, prefix_caching: bool = False) -> None:
            self.sizes = sizes

    d = greeted(SimpleNamespace(PagedKVCache=Plain, OutOfBlocks=RuntimeError))
    assert d.caps == ["prefix_caching"]
    for line in ("new 4 2 1 1 1 sliding_window=3", "new 4 2 1 1 1 prefix_caching sliding_window=3", "new 4 2 1 1 1 sliding_window=1"):
        answer = d.handle(line)[0]
        assert answer.startswith("err protocol ") and "sliding_window" in answer, (line, answer)
    assert d.handle("new 4 2 1 1 1 prefix_caching")[0] == "ok 0", "no handle taken by the refused ones"


def test_new_fields_spell_the_options_a_client_sends() -> None:
    assert new_fields((4, 2, 1, 1, 1)) == ["4", "2", "1", "1", "1"]
    assert new_fields((4, 2, 1, 1, 1), True, 3) == ["4", "2", "1", "1", "1", "prefix_caching", "sliding_window=3"]
    assert new_fields((4, 2, 1, 1, 1), sliding_window=np.int64(5))[-1] == "sliding_window=5"
    for bad in (True, 3.0, "3"):
        with pytest.raises(TypeError):
            new_fields((4, 2, 1, 1, 1), sliding_window=bad)
    d = greeted(WINDOWED)
    assert d.handle(" ".join(["new", *new_fields((4, 2, 1, 1, 1), True, 9)]))[0] == "ok 0"
    assert d.caches[0].made == ((4, 2, 1, 1, 1), True, 9), "the server reads what the client writes"


class Hybrid:
    """A constructor that takes layer_windows, and keeps what it was given; block_table answers its arguments."""

    def __init__(self, *sizes: int, layer_windows: Any = None) -> None:
        if layer_windows is not None and len(layer_windows) != sizes[2]:
            raise ValueError(f"layer_windows has {len(layer_windows)} entries")
        self.made = (sizes, layer_windows)

    def block_table(self, seq: int, layer: int = 0) -> np.ndarray:
        return np.array([seq, layer], dtype=np.int32)


def test_layer_windows_travel_as_one_word_with_none_for_full_attention() -> None:
    d = greeted(SimpleNamespace(PagedKVCache=Hybrid, OutOfBlocks=RuntimeError))
    assert d.caps == ["hybrid"], "hybrid announced: the constructor takes layer_windows"
    for line, made in (
        ("new 4 2 2 1 1 layer_windows=none,2", ((4, 2, 2, 1, 1), (None, 2))),
        ("new 4 2 3 1 1 layer_windows=7,none,007", ((4, 2, 3, 1, 1), (7, None, 7))),
        ("new 4 2 1 1 1", ((4, 2, 1, 1, 1), None)),
    ):
        handle = len(d.caches)
        assert d.handle(line)[0] == f"ok {handle}", line
        assert d.caches[handle].made == made, line
    assert d.handle("new 4 2 1 1 1 layer_windows=none,2")[0].startswith("err invalid_argument "), "the length is the contract's"
    for bad in ("layer_windows=", "layer_windows=None,2", "layer_windows=none,x", "layer_windows=none,,2", "layer_windows=+2,2",
                "layer_windows=none layer_windows=none", "layer_windows"):
        assert d.handle(f"new 4 2 1 1 1 {bad}")[0].startswith("err protocol "), bad
    assert d.handle("block_table 0 5 1")[0] == "ok 5,1", "block_table C S LAYER: the layer's group's table"
    assert d.handle("block_table 0 5")[0] == "ok 5,0"
    assert new_fields((4, 2, 2, 1, 1), layer_windows=(None, 2)) == ["4", "2", "2", "1", "1", "layer_windows=none,2"]
    assert new_fields((4, 2, 2, 1, 1), layer_windows=[])[-1] == "layer_windows=-"
    for windows in (2, "ab", (None, True), (2.0, None)):
        with pytest.raises(TypeError):
            new_fields((4, 2, 2, 1, 1), layer_windows=windows)
    assert call_fields("block_table", 3, 1) == ["3", "1"] and call_fields("block_table", 3) == ["3"]


def test_a_driver_without_hybrid_refuses_layer_windows_and_a_layers_table() -> None:
    d = greeted(WINDOWED)
    assert "hybrid" not in d.caps
    assert d.handle("new 4 2 2 1 1 layer_windows=none,2")[0].startswith("err protocol ")
    assert d.caches == []
    d.handle("new 4 2 1 1 1")
    assert d.handle("block_table 0 0 0")[0].startswith("err protocol "), "the LAYER form needs hybrid"


def test_negative_block_ids_travel_in_lists_and_transcripts() -> None:
    """A sliding window's released entries are -1 in block_table: the codec, a transcript and its replay carry them."""
    assert format_list([-1, -1, 2]) == "-1,-1,2" and parse_list("-1,-1,2") == [-1, -1, 2]
    t = parse("> block_table 0 0\n< ok -1,-1,2\n# released 0 0,1\n")
    assert t.steps == [("block_table 0 0", "ok -1,-1,2")] and t.released == {0: [("0", [0, 1])]}
    assert parse(t.text()).steps == t.steps
    assert table_difference("ok -1,-1,2", "ok -1,-1,2", 3, None) is None
    assert table_difference("ok -1,-1,2", "ok -1,-1,2", 3, BlockNames(3)) is None
    assert table_difference("ok -1,0", "ok -1,2", 3, BlockNames(3)) is None, "renamed: 2 names the oracle's 0"
    assert table_difference("ok -1,-1,2", "ok 0,-1,2", 3, None) is not None
    assert "should be -1" in str(table_difference("ok -1,0", "ok 1,0", 3, BlockNames(3)))
    assert "should be a block id of the pool" in str(table_difference("ok -2,0", "ok -2,0", 3, None)), "-1 only: -2 is no id"


def test_the_client_sends_the_window_and_reads_released_entries(tmp_path: Path) -> None:
    """RemoteKVCache(..., sliding_window=W) through the Python driver: the table's -1 entries come back as
    int32 -1, gather the window; a W out of range is the contract's ValueError; a driver whose implementation
    does not take the keyword answers err protocol, a DriverError."""
    impl = ExecImpl(f"exec:{sys.executable} -m wire.driver")
    try:
        assert "sliding_window" in impl.capabilities
        c = impl.PagedKVCache(4, 2, 1, 1, 1, sliding_window=3)
        c.add_seq(0)
        k = np.arange(1, 6, dtype=np.float16).reshape(1, 5, 1)
        c.append(0, 0, k, -k)
        table = c.block_table(0)
        assert table.dtype == np.int32 and table.tolist() == [-1, 1, 2]
        assert c.seq_len(0) == 5 and c.gather(0, 0)[0].ravel().tolist() == [4.0, 5.0]
        with pytest.raises(ValueError):
            impl.PagedKVCache(4, 2, 1, 1, 1, sliding_window=1)
    finally:
        impl.stop()
    (tmp_path / "no_window.py").write_text(
        "from paged import OutOfBlocks, PagedKVCache as Base\n\n\nclass PagedKVCache(Base):\n"
        "    def __init__(self, n, b, l, h, d, *, prefix_caching=False):\n"
        "        super().__init__(n, b, l, h, d, prefix_caching=prefix_caching)\n"
    )
    plain = ExecImpl(f"exec:env PYTHONPATH={tmp_path} {sys.executable} -m wire.driver --impl no_window")
    try:
        assert plain.capabilities == frozenset({"prefix_caching", "page_tables"})
        with pytest.raises(DriverError, match="err protocol this driver does not announce sliding_window"):
            plain.PagedKVCache(4, 2, 1, 1, 1, sliding_window=3)
        assert plain.PagedKVCache(4, 2, 1, 1, 1).stats()["free"] == 4, "the session goes on"
    finally:
        plain.stop()


def test_transcripts_match_errors_by_kind_only() -> None:
    assert matches("err invalid_argument layer 5", "err invalid_argument whatever") and not matches("err invalid_argument x", "err unknown_sequence x")
    assert matches("ok 1,2", "ok 1,2") and not matches("ok 1,2", "ok 1,3")
    t = parse("# id: x\n# flags: a b\n> stats 0\n< ok free=1 used=0 cached=0 evictions=0\n")
    assert t.meta == {"id": "x", "flags": "a b"} and len(t.steps) == 1
    with pytest.raises(ProtocolError):
        parse("> stats 0\n> stats 0\n")


def driver(how: str) -> str:
    return f"exec:{sys.executable} {DRIVERS / 'misbehaving.py'} {how}"


@pytest.mark.parametrize(
    "how, says",
    [
        ("crash", "exited with status 3"),
        ("hang", "no answer within 1 s"),
        ("garbage", "out of protocol: 'sure thing'"),
        ("binary", "not ASCII"),
        ("protocol", "answered 'err protocol I do not know that request'"),
    ],
)
def test_a_misbehaving_driver_fails_the_test_naming_the_request(how: str, says: str) -> None:
    impl = ExecImpl(driver(how), timeout=1.0)
    start = time.monotonic()
    with pytest.raises(DriverError) as failure:
        impl.PagedKVCache(4, 2, 1, 1, 1)
    message = str(failure.value)
    assert "'new 4 2 1 1 1'" in message, f"the failure names the request: {message}"
    assert says in message, message
    assert time.monotonic() - start < 10, "the per-request timeout bounds a hang"
    if how == "crash":
        assert "panicked at src/cache.rs:42" in message, "the driver's stderr is shown"
    impl.stop()


def test_a_driver_that_does_not_greet_is_refused() -> None:
    with pytest.raises(DriverError, match="hello 1"):
        DriverProcess(f"{sys.executable} {DRIVERS / 'misbehaving.py'} no-hello", timeout=5)


def test_a_missing_driver_is_a_clear_error() -> None:
    with pytest.raises(DriverError, match="cannot start driver"):
        DriverProcess("/nonexistent/driver", timeout=5)


# -- runs of requests ahead of their answers ---------------------------------------------------------


def served(lines: list[str], hello: bool = True) -> list[str]:
    """The oracle's answers to these requests (after its `hello`), served in-process: what a driver must answer."""
    d = Dispatcher(oracle.as_impl, "oracle")
    if hello:
        d.handle("hello 1")
    return [d.handle(line)[0] for line in lines]


def lockstep(how: str = "") -> str:
    """A driver serving the oracle that reads one request at a time and answers it before reading on."""
    return f"{sys.executable} {DRIVERS / 'lockstep.py'} {how}".rstrip()


def test_prefetched_answers_are_the_answers_of_the_calls_made() -> None:
    """Queries sent ahead to a driver that answers line by line: each call gets the answer it would get
    alone, a query skipped is dropped, and a call that was not prefetched comes after what was."""
    impl = ExecImpl(f"exec:{lockstep()}", timeout=10)
    model = oracle.as_impl.PagedKVCache(4, 2, 2, 1, 1)
    try:
        cache = impl.PagedKVCache(4, 2, 2, 1, 1)
        k = np.ones((1, 3, 1), np.float16)
        for c in (cache, model):
            c.add_seq(0)
            c.append(0, 1, k, -k)
        queries = [("stats", ()), ("num_free_blocks", ()), ("block_table", (0,)), ("seq_len", (0, 1)), ("gather", (0, 1)), ("block_table", (0,))]
        cache.prefetch(queries)
        assert cache.stats() == model.stats()
        assert cache.block_table(0).tolist() == model.block_table(0).tolist(), "num_free_blocks skipped"
        got, want = cache.gather(0, 1), model.gather(0, 1)
        assert all(np.array_equal(g.view(np.uint16), w.view(np.uint16)) for g, w in zip(got, want))  # bits: NaN != NaN, -0.0 == 0.0
        for c in (cache, model):
            c.append(0, 0, k, k)  # not prefetched: the last block_table's answer is dropped first
        assert cache.block_table(0).tolist() == model.block_table(0).tolist() and cache.seq_len(0, 0) == 3
        cache.prefetch([("seq_len", (0, 0)), ("stats", ())])
        cache.prefetch([("num_free_blocks", ())])  # a second prefetch drops what the first left
        assert cache.num_free_blocks() == model.num_free_blocks()
        with pytest.raises(ValueError, match="only queries"):
            cache.prefetch([("free", (0,))])
    finally:
        impl.stop()


def test_a_deferred_call_goes_with_the_next_and_a_wrong_answer_fails_that_one() -> None:
    """A call sent ahead with the oracle's outcome (`defer`) is made before the next call, whose answer is
    the state after it (a prefetched answer from before is dropped); a deferred call whose answer is not
    the oracle's (an error for a success, a success for an error, other hits) makes the next call raise
    RefusedAhead naming the deferred request, and the calls after it go on."""
    impl = ExecImpl(f"exec:{lockstep()}", timeout=10)
    try:
        cache = impl.PagedKVCache(4, 2, 1, 1, 1)
        cache.defer("add_seq", 0, hits=0)
        k = np.ones((1, 3, 1), np.float16)
        cache.prefetch([("seq_len", (0, 0))])
        cache.defer("append", 0, 0, k, k)
        assert cache.seq_len(0, 0) == 3, "the answer of the state after the deferred append"
        cache.defer("gather", 9, 0, error=KeyError)
        cache.defer("append", 0, 0, np.ones((1, 6, 1), np.float16), k, error=ValueError)  # shapes differ
        cache.defer("append", 0, 0, np.ones((1, 6, 1), np.float16), np.ones((1, 6, 1), np.float16), error=impl.OutOfBlocks)
        assert cache.stats()["used"] == 2
        for bad, says in [
            (dict(args=("free", 5)), "request 'free 0 5', sent ahead of its answer, answered 'err unknown_sequence"),
            (dict(args=("seq_len", 0, 0), error=KeyError), "answered 'ok 3', but should be 'err unknown_sequence'"),
            (dict(args=("add_seq", 1), hits=2), "answered 'ok 0', but should be 'ok 2'"),
        ]:
            cache.defer(*bad.pop("args"), **bad)  # type: ignore[arg-type]
            with pytest.raises(RefusedAhead, match=says):
                cache.stats()
            assert cache.stats()["used"] == 2
        with pytest.raises(ValueError, match="not seq_len"):
            cache.defer("seq_len", 0, 0)
        with pytest.raises(ValueError, match="TypeError has no wire kind"):
            cache.defer("free", 0, error=TypeError)
    finally:
        impl.stop()


def test_a_batch_larger_than_the_pipes_does_not_deadlock() -> None:
    """Far more requests than the pipes hold, to a driver that blocks writing answers nobody reads yet:
    the write reads answers as it goes, and every answer is the request's own."""
    process = DriverProcess(lockstep(), timeout=10)
    try:
        process.exchange("new 3 1 1 1 1")
        lines = [f"seq_len 0 {s} 0" if s % 3 else "stats 0" for s in range(30000)]
        process.send(lines)
        answers = [process.take() for _ in lines]
        assert answers == served(["new 3 1 1 1 1", *lines])[1:]
        assert process.exchange("num_free_blocks 0") == "ok 3", "the session goes on in step"
    finally:
        process.stop()


def test_a_bad_answer_in_a_batch_names_its_own_request() -> None:
    """A contract error, and an answer that is not ASCII, in the middle of a batch read at once: each
    is raised by its own call and names its own request, and the calls before it get their answers."""
    impl = ExecImpl(f"exec:{lockstep('block_table')}", timeout=10)
    try:
        cache = impl.PagedKVCache(4, 2, 1, 1, 1)
        cache.add_seq(0)
        cache.prefetch([("seq_len", (0, 0)), ("gather", (7, 0)), ("stats", ()), ("block_table", (0,)), ("num_free_blocks", ())])
        time.sleep(0.2)  # every answer is written before the first is read: they come in one read
        assert cache.seq_len(0, 0) == 0
        with pytest.raises(KeyError):
            cache.gather(7, 0)
        assert cache.stats()["free"] == 4
        with pytest.raises(DriverError, match="request 'block_table 0 0' got a response that is not ASCII"):
            cache.block_table(0)
    finally:
        impl.stop()


def test_a_driver_that_reads_nothing_fails_within_the_timeout() -> None:
    process = DriverProcess(lockstep("deaf"), timeout=30)  # its start-up and hello, on a loaded machine
    process.timeout = 1
    start = time.monotonic()
    with pytest.raises(DriverError, match=r"request 'stats 0' accepted no input for 1 s"):
        process.send(["stats 0"] * 200000)
    assert time.monotonic() - start < 10
    process.stop()


def test_the_python_driver_answers_a_run_at_once_and_each_request_alone() -> None:
    """`wire.server.serve` answers what it has read in one write, and a lone request at once."""
    import io

    class Input(io.BytesIO):
        """Requests that arrive in two reads."""

        def __init__(self, parts: list[bytes]) -> None:
            super().__init__()
            self.parts = parts

        def read1(self, size: int = -1) -> bytes:
            return self.parts.pop(0) if self.parts else b""

    class Output(io.BytesIO):
        def __init__(self) -> None:
            super().__init__()
            self.flushes: list[bytes] = []

        def flush(self) -> None:
            self.flushes.append(self.getvalue()[sum(map(len, self.flushes)) :])

    from wire.server import serve

    def answered(lines: list[str]) -> bytes:
        return "".join(f"{a}\n" for a in served(lines, hello=False)).encode()

    out = Output()
    serve(Dispatcher(oracle.as_impl, "oracle"), Input([b"hello 1\nnew 2 1 1 1 1\nstats 0\n", b"num_free_blocks 0\nquit\nstats 0\n"]), out)
    first = ["hello 1", "new 2 1 1 1 1", "stats 0"]
    assert out.flushes == [answered(first), answered([*first, "num_free_blocks 0", "quit"])[len(answered(first)) :]], "nothing after quit"
    out = Output()
    serve(Dispatcher(oracle.as_impl, "oracle"), Input([b"hello 1\n", b"stats 9"]), out)
    assert out.flushes == [answered(["hello 1"]), answered(["hello 1", "stats 9"])[len(answered(["hello 1"])) :]], "a last line without its newline"
    assert out.flushes[1].startswith(b"err protocol")


SHARED = """# id: two-caches
> new 4 2 1 1 1
< ok 0
> add_seq 0 0
< ok 0
> new 2 1 1 1 1
< ok 1
> append 1 5 0 1,1,1 1,1,1 3c00 3c00
< err unknown_sequence
> stats 7
< err protocol no cache has handle 7
> stats
< err protocol stats needs a cache handle
> free 0 0
< ok
# released 0 3
"""


def test_a_transcript_renumbered_for_a_session_that_made_caches_before() -> None:
    """Every handle moves by the caches made before (requests, new's answers, released lines); a
    transcript whose handles are not plain small decimals, or with a hello, a quit or an unknown
    verb, is not renumbered."""
    shifted = renumbered(parse(SHARED), 3)
    assert shifted is not None
    assert [r for r, _ in shifted.steps] == [
        "new 4 2 1 1 1", "add_seq 3 0", "new 2 1 1 1 1", "append 4 5 0 1,1,1 1,1,1 3c00 3c00", "stats 10", "stats", "free 3 0",
    ]
    assert [w for _, w in shifted.steps][:3] == ["ok 3", "ok 0", "ok 4"]
    assert shifted.released == {6: [("3", [3])]}
    for line in ("hello 1", "quit", "frobnicate 0", "stats 007", "stats -1", "stats 18446744073709551616"):
        assert renumbered(parse(f"{SHARED}> {line}\n< err protocol\n"), 3) is None, line


def vector(name: str) -> Path:
    return Path(__file__).resolve().parents[2] / "ci" / "vectors" / f"{name}.txt"


def test_a_shared_session_gives_every_transcript_the_verdict_of_a_fresh_one() -> None:
    """One driver session for several transcripts answers what a fresh session each answers: the same
    mismatches and skips; a driver that is right only in a fresh session still passes (the fresh replay
    decides); and the session is kept while transcripts pass."""
    names = ["s07-shared-block-in-place", "error-second-hello", "prefix-random-1", "random-1", "error-precedence"]
    texts = [vector(n).read_text() for n in names]
    texts.append(texts[0].replace("< ok free=", "< ok free=9", 1))  # an answer no driver gives: a mismatch
    kept = {}
    for how in ("", "one-cache"):
        command = f"exec:{lockstep(how)}"
        shared = Replayer(command)
        kept[how] = []
        for text in texts:
            transcript = parse(text)
            got, want = shared.replay(transcript, Profile()), replay_fresh(transcript, command, Profile())
            assert (str(got[0]), got[1]) == (str(want[0]), want[1]), (how, transcript.meta.get("id"))
            kept[how].append(shared.session is not None)
        assert got[0] is not None, "the last transcript's changed answer is a mismatch"
        shared.stop()
    assert kept[""] == [True] * (len(texts) - 1) + [False], "the passing transcripts share one session; a mismatch ends it"
    assert kept["one-cache"][0] and not all(kept["one-cache"][:-1]), "the one-cache driver fails after the first: replayed fresh"
    with pytest.raises(DriverError, match="not ASCII"):
        Replayer(f"exec:{lockstep('stats')}").replay(parse(texts[0]), Profile())
