"""The tests of the documents (README.md, docs/, every README) against the tree (the rule: meta_tests/conftest.py)."""
