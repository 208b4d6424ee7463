"""The tests of our own part bench/, found by its name (the rule: meta_tests/conftest.py)."""
