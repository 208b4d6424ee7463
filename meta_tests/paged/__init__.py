"""The tests of our own part paged/, found by its name (the rule: meta_tests/conftest.py)."""
