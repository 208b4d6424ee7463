"""The implementation under test: reaching it once (a module imported, a driver's hello), and what it
announces there: the profile it declares and the optional parts of the contract it has. A driver's first
hello is recorded (`wire.process.first_hello`): every later session must announce the same.

It runs in the gate's worker process (`supervise`): a module that exits or crashes on import ends that
process, and the supervisor says so; an exception, SystemExit included, is caught here and named.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from dataclasses import dataclass

from wire.process import DriverError, first_hello
from wire.replay import Session
from wire.server import capabilities as module_capabilities
from wire.server import profile_words

# The optional parts of the contract (CONTRACT.md's "(opt-in)" sections), by the capability word that
# announces each (an option of `new`, wire.codec.CAPABILITY: `hybrid` for `layer_windows`; `page_tables`, the
# exports a kernel reads, for a cache with their three calls), with the name a verdict gives it.
OPTIONAL: dict[str, str] = {
    "prefix_caching": "prefix caching", "sliding_window": "sliding window", "hybrid": "hybrid models", "page_tables": "page tables",
}


@dataclass(frozen=True)
class Target:
    """What the gate knows of the implementation once it reached it."""

    impl: str
    capabilities: frozenset[str]
    profile: str  # the profile it declares, as announced (OPTION=VALUE,...), "" for none: oracle.profile.declared parses it
    where: str  # the module's file, or the driver's command

    @property
    def announced(self) -> str:
        """Its capabilities and profile words, as a driver's hello gives them (sorted): what every later session must announce."""
        return " ".join(sorted({*self.capabilities, *filter(None, self.profile.split(","))}))

    @property
    def driver(self) -> bool:
        return self.impl.startswith("exec:")

    def line(self) -> str:
        caps = ", ".join(sorted(self.capabilities)) or "none"
        kind = f"driver {self.where!r}" if self.driver else f"{self.impl} ({self.where})"
        return f"implementation under test: {kind}, capabilities: {caps}"


def reach(impl: str, hello_seconds: float) -> Target | str:
    """The implementation reached (a Target), or why it cannot be (a line for CANNOT RUN); a driver's session
    waits hello_seconds for each answer (the Config's)."""
    if impl.startswith("exec:"):
        try:
            session = Session(impl, timeout=hello_seconds)
        except DriverError as exc:
            return str(exc)
        try:
            target = Target(impl, session.capabilities, session.profile, impl[5:].strip())
            first_hello(impl[5:], target.announced.split())
            return target
        finally:
            session.close()
    try:
        module = importlib.import_module(impl)
    except SystemExit as exc:
        return f"importing {impl!r} raised SystemExit({exc.code!r}): a module that exits on import cannot be gated"
    except Exception as exc:  # noqa: BLE001 - the module itself is broken or not on the path
        return (
            f"cannot import {impl!r}: {type(exc).__name__}: {exc}\n"
            "  (is its folder on PYTHONPATH? e.g. PYTHONPATH=mutants/ports ci/gate --impl broken_allocation)"
        )
    where = str(getattr(module, "__file__", "?"))
    missing = [n for n in ("PagedKVCache", "OutOfBlocks") if not hasattr(module, n)]
    if missing:
        return f"{impl!r} ({where}) does not export {', '.join(missing)}"
    return Target(impl, module_parts(module), ",".join(profile_words(module)), where)


def module_parts(module: ModuleType) -> frozenset[str]:
    """The optional parts a Python module has: the capability of each option of `new` its constructor takes,
    what a driver of it announces (`wire.server.capabilities`: `hybrid` when it takes `layer_windows`,
    `page_tables` when its cache has the three calls of page tables for kernels)."""
    return frozenset(module_capabilities(module))
