"""The suite's tests of itself (the gate, the documents, the messages, determinism, xfails, the
generator, the plugin), apart from the conformance tests in tests/ that the installed gate runs. They
share the conformance tests' helpers (tests/ on sys.path) and plugin (tests/plugin.py)."""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

pytest_plugins = ["plugin"]
