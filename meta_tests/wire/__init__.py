"""The tests of our own part wire/, found by its name (the rule: meta_tests/conftest.py)."""
