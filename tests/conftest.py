"""Loads the suite's pytest plugin, tests/plugin.py (its options, profiles, hooks and fixtures)."""

pytest_plugins = ["plugin"]
