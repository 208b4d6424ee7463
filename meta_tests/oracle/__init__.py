"""The tests of our own part oracle/, found by its name (the rule: meta_tests/conftest.py)."""
