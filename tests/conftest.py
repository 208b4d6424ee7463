"""Loads the suite's pytest plugins, one a job (tests/plugins/: options, profiles, hooks and fixtures)."""

from tests.plugins import PLUGINS

pytest_plugins = PLUGINS
