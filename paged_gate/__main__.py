"""`python -m paged_gate`: the same as the `paged-gate` command."""

import sys

from paged_gate.cli import main

if __name__ == "__main__":
    sys.exit(main())
