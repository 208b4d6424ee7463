"""The tests of our own part vectorgen/, found by its name (the rule: meta_tests/conftest.py)."""
