"""A driver that misbehaves on purpose, for meta_tests/wire/test_wire.py: `python misbehaving.py HOW`.

It greets properly, then, at its first `new`, does HOW: `crash` (exits with status 3 after
writing to stderr), `hang` (never answers), `garbage` (answers a line that is neither ok
nor err), `binary` (answers bytes that are not ASCII), `protocol` (answers `err protocol`).
Or `no-hello`, which answers the handshake wrongly.
"""

import sys
import time

how = sys.argv[1]
for line in sys.stdin:
    verb = line.split(" ")[0].strip()
    if verb == "hello":
        out = b"hi there\n" if how == "no-hello" else b"ok 1 misbehaving\n"
    elif how == "crash":
        sys.stderr.write("thread 'main' panicked at src/cache.rs:42: index out of bounds\n")
        sys.stderr.flush()
        sys.exit(3)
    elif how == "hang":
        time.sleep(3600)
        out = b""
    elif how == "garbage":
        out = b"sure thing\n"
    elif how == "binary":
        out = b"ok \xff\xfe\n"
    else:
        out = b"err protocol I do not know that request\n"
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
