"""docs/PROTOCOL.md's own rules, each case a driver author would otherwise guess: the handshake (a
refused hello uses nothing up, a second one is refused, quit before it is refused), the kind each
malformed field gets (`err protocol`: a `+`, an empty field, a negative shape dimension, an unknown
field of `new`, `quit` with a field), the spellings every driver accepts (leading zeros, uppercase
hex), and that none of them changes anything. Requests are written as sent (`Script.raw`); the
answers are the reference driver's (`wire.server`).
"""

from __future__ import annotations

from vectorgen.script import Script, Vector, chunk, collect
from wire.transcript import OWN_HANDSHAKE

VECTORS: list[Vector] = []
vector = collect(VECTORS)


def before_hello(vid: str, comment: str) -> Script:
    """A vector that starts before the handshake: the replayer sends no hello of its own."""
    s = Script(vid, comment, "protocol")
    s.meta["handshake"] = OWN_HANDSHAKE
    return s


@vector
def refused_hello() -> Script:
    s = before_hello(
        "protocol-refused-hello",
        "a hello refused (another version, none, two, a malformed one) does not use up the handshake: "
        "other requests are still refused, no handle is taken, and hello 1 is answered after it",
    )
    for line in ("new 4 2 1 1 1", "hello 2", "hello 0", "hello -1", "hello", "hello 1 1", "hello +1", "hello  1", "stats 0"):
        s.raw(line)
    s.raw("hello 1")
    c = s.new(4, 2, 1, 1, 1)  # handle 0: the refused new took none
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 1, 220))
    s.observe(c, [0], tables=False)  # no table: nothing announced, so no profile to compare it by
    return s


@vector
def quit_before_hello() -> Script:
    s = before_hello(
        "protocol-quit-before-hello",
        "quit before hello is refused like every request before the handshake, and the session goes on; "
        "quit with a field is malformed; quit answers ok and ends the session",
    )
    s.raw("quit")
    s.raw("hello 1")
    c = s.new(4, 2, 1, 1, 1)
    c.add_seq(0)
    s.raw("quit 0")
    s.observe(c, [0], tables=False)
    s.raw("quit")
    return s


@vector
def second_hello() -> Script:
    s = Script("error-second-hello", "a second hello, of any version, is a protocol error and changes nothing: the caches and the next handle stay", "protocol")
    c = s.new(4, 2, 1, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 1, 210))
    for line in ("hello 1", "hello 2"):
        s.raw(line)
    s.observe(c, [0])
    other = s.new(4, 2, 1, 1, 1)
    s.observe(other, [])
    return s


# Each is `err protocol`, whatever the cache would say of the values: a field that does not parse,
# a field too many or too few, a shape with a negative dimension (its product matches the payload).
MALFORMED = (
    "new 4 2 1 1 1 prefix_caching extra",  # an unknown 7th field
    "new 4 2 1 1 1 extra",  # an unknown 6th field
    "new 4 2 1 1 1 prefix_caching prefix_caching",
    "new 4 2 1 1 1 sliding_window=x",  # W not a decimal integer: malformed whether or not the driver has the window
    "new 4 2 1 1 1 sliding_window=3 sliding_window=3",  # an option given twice
    "new 4 2 1 1",
    "new +4 2 1 1 1",
    "new 4 2 1 1 9223372036854775808",  # past i64
    "add_seq 0 +5",
    "add_seq 0 5 6 7",
    "add_seq 0 9223372036854775808",
    "seq_len 0 0 +0",
    "seq_len 0 -9223372036854775809 0",
    "seq_len 0 0",
    "gather 0 0 0 0",
    "stats  0",  # an empty field
    "stats 0 0",
    "stats",
    "stats 5",  # a handle never made
    "stats -1",
    "STATS 0",  # verbs are lowercase
    "frobnicate 0",
    "append 0 0 0 -1,-1,1 -1,-1,1 3c00 bc00",  # negative dimensions whose product is 1, the payload's count
    "append 0 0 0 1,-1,1 1,-1,1 - -",
    "append 0 0 0 1,1,1 1,1,1 3c00",  # a field too few
    "append 0 0 0 1,1,1 1,1,1 3c00 bc0",  # a payload of the wrong length
    "append 0 0 0 1,1,1 1,1,1 3c00 bc000000",
    "append 0 0 0 1,1,1 1,1,1 3c00 -",
    "append 0 0 0 1,1,1 1,1,1 3c00 bg00",  # not hex
    "append 0 0 0 1,1,1 1,1,1 3c00 +c00",
    "append 0 0 0 1,,1 1,1,1 3c00 bc00",  # an empty dimension
    "append 0 0 +0 1,1,1 1,1,1 3c00 bc00",
    "fork 0 0",
    "free 0 0 0",
    "block_table 0 0x1",
    "num_free_blocks 0 0",
    "close 0 0",
    "quit 1",
)


@vector
def malformed_requests() -> Script:
    s = Script(
        "protocol-malformed-requests",
        "a malformed request is err protocol and changes nothing, whatever the cache would say of its values: "
        "+5, a number past i64, an empty field, a field too many or too few, an unknown field of new, "
        "a negative shape dimension, a payload of the wrong length or not hex, a handle never made, an unknown verb",
        "protocol",
    )
    c = s.new(4, 2, 1, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 1, 230))
    s.observe(c, [0])
    for line in MALFORMED:
        s.raw(line)
    s.observe(c, [0])
    other = s.new(4, 2, 1, 1, 1)  # handle 1: no malformed new took one
    s.observe(other, [])
    return s


@vector
def spellings() -> Script:
    s = Script(
        "protocol-integer-spellings",
        "leading zeros are allowed and change no value (007 is 7, -0 is 0), and hex digits may be uppercase; "
        "answers are written without leading zeros, in lowercase",
        "protocol",
    )
    c = s.new(4, 2, 2, 1, 1)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 1, 240))
    for line in (
        "seq_len 0 000 00",
        "seq_len 00 -0 -00",
        "gather 0 0 0001",
        "add_seq 0 007",
        "append 0 7 1 01,02,01 1,2,1 3C00ABCD BC002bcd",
        "gather 0 7 1",
        "fork 0 07 -8",
        "new 0004 0002 1 1 1",
        "stats 001",
        "free 0 00000000000000000000000000000000000000007",
    ):
        s.raw(line)
    for line in ("stats 0", "num_free_blocks 0"):  # every observable, as Script.observe would ask (c does not know 7 and -8)
        s.raw(line)
    for seq in (0, 7, -8):
        s.raw(f"block_table 0 {seq}")
        for layer in (0, 1):
            s.raw(f"seq_len 0 {seq} {layer}")
            s.raw(f"gather 0 {seq} {layer}")
    return s
