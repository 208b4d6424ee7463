"""A deliberately broken implementation: the oracle, whose seq_len answers one more from length 2 on.

A breach any profile sees, wrapped around any cache class (meta_tests/test_reports.py wraps the
oracle under the run's profile): a state machine's failure on it must read in the wire's terms,
meta_tests/test_reports.py::test_a_failure_shows_the_requests_before_the_rule_names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SeqLenOneTooMany"]


class SeqLenOneTooMany:
    """`inner(*sizes, **kwargs)` with seq_len one too many from length 2 on; every other call its own."""

    def __init__(self, inner: Any, *sizes: Any, **kwargs: Any) -> None:
        self._inner = inner(*sizes, **kwargs)

    def seq_len(self, *args: Any) -> int:
        length = int(self._inner.seq_len(*args))
        return length + 1 if length >= 2 else length

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
