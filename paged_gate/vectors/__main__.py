"""`python -m paged_gate.vectors [--check]`: the generator on the suite's ci/vectors (paged_gate.vectors.cli)."""

import sys

from paged_gate.vectors.cli import main

sys.exit(main())
