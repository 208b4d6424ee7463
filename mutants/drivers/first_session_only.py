"""A driver that claims capabilities it never shows, for meta_tests/test_verdict.py:
`python first_session_only.py MARKER`.

It serves the reference cache. Its first session (while the file MARKER does not exist; it creates
it) announces what `paged` has, prefix caching, the sliding window and hybrid models; every later session announces
nothing, so the tests and vectors that need them would be skipped as "not announced" while the gate's
first hello claimed them. The gate must FAIL it: every session announces what the first did.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import paged  # noqa: E402
from wire.server import Dispatcher, serve  # noqa: E402

marker = Path(sys.argv[1])
dispatcher = Dispatcher(paged, "first-session-only")
if marker.exists():
    dispatcher.caps = []  # a later session: nothing announced
else:
    marker.write_text("the first session announced its capabilities\n")
sys.exit(serve(dispatcher, sys.stdin.buffer, sys.stdout.buffer))
