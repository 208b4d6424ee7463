"""The implementation under test: whether it can be reached, and the profile it declares."""

from __future__ import annotations

import importlib

from wire.client import Session, DriverError


def unreachable(impl: str) -> str | None:
    """None when the implementation can be reached (and a line naming it is printed); else why not."""
    if impl.startswith("exec:"):
        try:
            session = Session(impl, timeout=30)
        except DriverError as exc:
            return str(exc)
        capabilities = ", ".join(sorted(session.capabilities)) or "none"
        print(f"implementation under test: driver {impl[5:].strip()!r}, capabilities: {capabilities}")
        session.close()
        return None
    try:
        module = importlib.import_module(impl)
    except Exception as exc:  # noqa: BLE001 - the module itself is broken or not on the path
        return (
            f"cannot import {impl!r}: {type(exc).__name__}: {exc}\n"
            "  (is its folder on PYTHONPATH? e.g. PYTHONPATH=ci/examples ci/gate --impl broken_allocation)"
        )
    missing = [n for n in ("PagedKVCache", "OutOfBlocks") if not hasattr(module, n)]
    if missing:
        return f"{impl!r} ({getattr(module, '__file__', '?')}) does not export {', '.join(missing)}"
    print(f"implementation under test: {impl} ({getattr(module, '__file__', '?')})")
    return None


def declared(impl: str) -> str:
    """The profile the implementation declares (a driver at hello, a module as PROFILE)."""
    session = Session(impl, timeout=30)
    try:
        return session.profile
    finally:
        session.close()
