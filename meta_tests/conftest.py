"""The suite's tests of itself, apart from the conformance tests in tests/ that the installed gate runs.

The rule: meta_tests/ itself holds the tests of the suite's own honesty (broken ports refused, the gate,
the verdict, xfails, coverage, determinism, profiles, messages, plugins, strategies); the tests of one
of our own parts are in meta_tests/<part>/, named after the part's folder (meta_tests/wire/ tests wire/,
meta_tests/paged/ paged's fast paths, meta_tests/docs/ the documents); the broken implementations they
run live in mutants/. They share the conformance tests' helpers (imported by name:
`from tests import harness`) and plugins (tests/plugins/)."""

from tests.plugins import PLUGINS

pytest_plugins = PLUGINS
