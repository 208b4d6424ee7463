"""The environment of the gate's pytest runs, which the gate controls, so that nothing narrows the suite unseen.

pytest obeys variables of its own: PYTEST_ADDOPTS (more arguments: `-k`, a test path, `-p no:...`),
PYTEST_PLUGINS (plugins that may deselect tests) and PYTEST_DISABLE_PLUGIN_AUTOLOAD (drops xdist and
Hypothesis's plugin). The caller's are refused (`refused`: the gate cannot run; arguments after `--` are
how a run is narrowed on purpose, and its verdict says PARTIAL). The worker pins its environment
before it reaches the implementation (`pin`); its pytest runs get that one (`for_suite`), so a variable a
module sets on import, or later, is never handed on, and the verdict names it (`set_since`). The gate
sets HYPOTHESIS_PROFILE itself (paged_gate.conformance), whoever else sets it. Inside the pytest run, where
the implementation is imported again, the suite's plugin keeps it from handing them to xdist's workers
(tests/plugins/implementation.py).
"""

from __future__ import annotations

import os

from testkit.config import SELECTING, WATCHED

_pinned: dict[str, str] | None = None


def refused() -> str:
    """Why the caller's environment cannot be gated (it sets a variable pytest would obey), or ""."""
    given = [f"{name}={os.environ[name]!r}" for name in SELECTING if name in os.environ]
    if not given:
        return ""
    return (
        f"the environment sets {', '.join(given)}, which the suite's pytest runs would obey (it can deselect tests "
        "or change what they run): unset it; arguments after `--` go to pytest, and a run they narrow says PARTIAL"
    )


def pin() -> None:
    """Take the environment the pytest runs get: this process's now, before the implementation runs in it."""
    global _pinned
    _pinned = dict(os.environ)


def for_suite() -> dict[str, str]:
    """The pinned environment (this process's, if none was pinned), without the variables that select tests."""
    base = dict(os.environ) if _pinned is None else _pinned
    return {k: v for k, v in base.items() if k not in SELECTING}


def set_since() -> list[str]:
    """The pytest and Hypothesis variables set, changed or removed since `pin`, as NAME='value' (NAME removed)."""
    if _pinned is None:
        return []
    names = sorted({k for k in (*_pinned, *os.environ) if k.startswith(WATCHED) and _pinned.get(k) != os.environ.get(k)})
    return [f"{k}={os.environ[k]!r}" if k in os.environ else f"{k} removed" for k in names]
