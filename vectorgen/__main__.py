"""`python -m vectorgen [--check]`: the generator on the suite's ci/vectors (vectorgen.cli)."""

import sys

from vectorgen.cli import main

sys.exit(main())
