"""`python -m paged.driver [--impl MODULE]`: this cache (or any Python implementation) over the
wire protocol of docs/PROTOCOL.md, on stdin and stdout. The protocol lives in `wire`."""

import sys

from wire.server import main

if __name__ == "__main__":
    sys.exit(main())
