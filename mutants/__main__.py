"""`python -m mutants`: score the suite against the planted mutants (mutants/sNN, or mutants/rust/rNN with --rust)."""

from .runner import main

raise SystemExit(main())
