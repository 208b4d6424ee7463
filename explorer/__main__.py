"""`python -m explorer`: the bounded exhaustive explorer from the command line."""

from . import main

raise SystemExit(main())
