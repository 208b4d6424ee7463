"""`python -m wire.driver [--impl MODULE]` (installed as `paged-driver`): the reference cache (or any
Python implementation) over the wire protocol of docs/PROTOCOL.md, on stdin and stdout. The server
is `wire.server`; this is its command."""

import sys

from .server import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
