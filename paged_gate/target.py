"""Reaching the implementation under test once (a module imported, a driver's hello), and what it
announces there: the profile it declares and the optional parts of the contract it has (a
`wire.target.Target`). A driver's first hello is recorded (`wire.process.first_hello`): every later session
must announce the same.

It runs in the gate's worker process (`supervise`): a module that exits or crashes on import ends that
process, and the supervisor says so; an exception, SystemExit included, is caught here and named.
"""

from __future__ import annotations

import importlib

from wire.process import DriverError, first_hello
from wire.replay import Session
from wire.server import profile_words
from wire.target import Impl, Target, module_parts

# The optional parts of the contract (CONTRACT.md's "(opt-in)" sections), by the capability word that
# announces each (an option of `new`, wire.codec.CAPABILITY: `hybrid` for `layer_windows`; `page_tables`, the
# exports a kernel reads, for a cache with their three calls), with the name a verdict gives it.
OPTIONAL: dict[str, str] = {
    "prefix_caching": "prefix caching", "sliding_window": "sliding window", "hybrid": "hybrid models", "page_tables": "page tables",
}


def reach(impl: Impl, hello_seconds: float) -> Target | str:
    """The implementation reached (a Target), or why it cannot be (a line for CANNOT RUN); a driver's session
    waits hello_seconds for each answer (the Config's)."""
    if impl.command is not None:
        try:
            session = Session(impl, timeout=hello_seconds)
        except DriverError as exc:
            return str(exc)
        try:
            target = Target(impl, session.capabilities, session.profile, impl.command)
            first_hello(impl.command, target.announced.split())
            return target
        finally:
            session.close()
    name = impl.text
    try:
        module = importlib.import_module(name)
    except SystemExit as exc:
        return f"importing {name!r} raised SystemExit({exc.code!r}): a module that exits on import cannot be gated"
    except Exception as exc:  # noqa: BLE001 - the module itself is broken or not on the path
        return (
            f"cannot import {name!r}: {type(exc).__name__}: {exc}\n"
            "  (is its folder on PYTHONPATH? e.g. PYTHONPATH=mutants/ports ci/gate --impl broken_allocation)"
        )
    where = str(getattr(module, "__file__", "?"))
    missing = [n for n in ("PagedKVCache", "OutOfBlocks") if not hasattr(module, n)]
    if missing:
        return f"{name!r} ({where}) does not export {', '.join(missing)}"
    return Target(impl, module_parts(module), ",".join(profile_words(module)), where)
