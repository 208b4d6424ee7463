"""`python -m mutants`: score the suite against the planted mutants s01 to s13."""

from .runner import main

raise SystemExit(main())
