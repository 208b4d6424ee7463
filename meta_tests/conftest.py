"""The suite's tests of itself (the gate, the documents, the messages, determinism, xfails, the
generator, the plugins, the explorer's honesty, paged's fast paths), apart from the conformance tests
in tests/ that the installed gate runs. They share the conformance tests' helpers (imported by name:
`from tests import harness`) and plugins (tests/plugins/)."""

from tests.plugins import PLUGINS

pytest_plugins = PLUGINS
