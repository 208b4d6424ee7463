"""`python -m bench`: the benchmark (bench/cli.py)."""

import sys

from .cli import main

sys.exit(main())
