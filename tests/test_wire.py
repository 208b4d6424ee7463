"""The wire itself: the codec's round trips, the server's answers, and the client's verdict on a
driver that crashes, hangs, prints garbage or answers out of protocol (a clear DriverError that
names the request, within the timeout; the suite never hangs). Independent of --impl."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import oracle.as_impl
from wire.client import DriverError, DriverProcess, ExecImpl
from wire.codec import ProtocolError, call_fields, format_list, format_payload, parse_int, parse_list, parse_payload
from wire.server import Dispatcher
from wire.transcript import matches, parse

pytestmark = pytest.mark.oracle  # tests of the suite's own machinery, like the oracle's

DRIVERS = Path(__file__).resolve().parent / "drivers"


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
    assert d.handle("hello 1")[0] == "ok 1 oracle prefix_caching"
    answers = [d.handle(line)[0] for line in (
        "new 1 1 1 1 1", "add_seq 0 3", "append 0 3 0 1,1,1 1,1,1 3c00 3c00", "append 0 3 0 1,1,1 1,1,1 3c00 3c00",
        "gather 0 9 0", "fork 0 3 3", "new 0 1 1 1 1", "stats 7", "frobnicate 0", "append 0 3 0 1,1,1 1,1,1 3c 3c00",
    )]
    assert [a.split(" ")[:2] for a in answers] == [
        ["ok", "0"], ["ok", "0"], ["ok"], ["err", "out_of_blocks"], ["err", "unknown_sequence"],
        ["err", "invalid_argument"], ["err", "invalid_argument"], ["err", "protocol"], ["err", "protocol"], ["err", "protocol"],
    ]
    assert d.handle("quit") == ("ok", True)


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
