"""A driver that answers strictly line by line, for meta_tests/wire/test_wire.py: `python lockstep.py [HOW]`.

It reads its input one byte at a time (never a request it has not reached) and writes and
flushes each answer before reading on, so a client that writes a run of requests finds its
input full as soon as its unread answers fill the pipe. It serves the oracle. With HOW:
`deaf`, it reads nothing after the handshake; `one-cache`, every `new` forgets the caches before
it, so handles start again at 0 (right for a fresh session's first cache only); `VERB`, it answers
that verb with bytes that are not ASCII.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import oracle.as_impl  # noqa: E402
from wire.server import Dispatcher  # noqa: E402

how = sys.argv[1] if len(sys.argv) > 1 else ""
dispatcher = Dispatcher(oracle.as_impl, "lockstep")
while True:
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            sys.exit(0)
        line += byte
    if how == "one-cache" and line.startswith(b"new "):
        dispatcher.caches.clear()
    response, done = dispatcher.handle(line.decode("ascii"))
    out = b"ok \xff\n" if line.split(b" ")[0] == how.encode() else response.encode("ascii") + b"\n"
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    if how == "deaf" and dispatcher.greeted:
        time.sleep(3600)
    if done:
        sys.exit(0)
