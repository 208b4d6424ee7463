"""The tests of our own part explorer/, found by its name (the rule: meta_tests/conftest.py)."""
