"""`python -m mutants`: score the suite against the planted mutants (mutants/sNN, or mutants/rust/rNN with --rust,
or the real engines' field bugs, mutants/engines/, with --engine)."""

import sys

if any(a == "--engine" or a.startswith("--engine=") for a in sys.argv[1:]):  # the engines' field bugs: mutants/engines/
    from .engines.runner import main as engine_main

    raise SystemExit(engine_main(sys.argv[1:]))

from .runner import main  # noqa: E402

raise SystemExit(main())
