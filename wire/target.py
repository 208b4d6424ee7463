"""The implementation under test, named once: `--impl`'s text is taken apart here and nowhere else.

A name is a Python module (it exports PagedKVCache and OutOfBlocks); `exec:CMD` is a driver in any
language, started as CMD (docs/PROTOCOL.md). `parse` gives an `Impl`, which every part that reaches an
implementation takes (wire's sessions and client, the explorer's ports, the suite's harness, the gate);
their entry points call `parse` on what they are given, so a text or an `Impl` both do. Once reached, a
`Target` adds what it announced: its capabilities and the profile it declares.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from .server import capabilities

EXEC = "exec:"  # the prefix of a driver's command


@dataclass(frozen=True)
class Impl:
    """What `--impl` names: `text` as given (`paged`, `exec:CMD`); `command` a driver's CMD, None for a module."""

    text: str
    command: str | None = None

    @property
    def driver(self) -> bool:
        return self.command is not None

    def __str__(self) -> str:
        return self.text


def parse(spec: str | Impl) -> Impl:
    """`exec:CMD` is a driver (its command CMD, stripped); any other text names a Python module. An Impl stays as it is."""
    if isinstance(spec, Impl):
        return spec
    if spec.startswith(EXEC):
        return Impl(spec, spec[len(EXEC) :].strip())
    return Impl(spec)


def driver(command: str) -> Impl:
    """The Impl of a driver started as `command`."""
    return parse(EXEC + command)


@dataclass(frozen=True)
class Target:
    """An implementation once reached: what it announced (a driver at hello; a module by its constructor's
    options and its PROFILE)."""

    impl: Impl
    capabilities: frozenset[str]
    profile: str  # the profile it declares, as announced (OPTION=VALUE,...), "" for none: oracle.profile.declared parses it
    where: str  # the module's file, or the driver's command

    @property
    def announced(self) -> str:
        """Its capabilities and profile words, as a driver's hello gives them (sorted): what every later session must announce."""
        return " ".join(sorted({*self.capabilities, *filter(None, self.profile.split(","))}))

    @property
    def driver(self) -> bool:
        return self.impl.driver

    def line(self) -> str:
        caps = ", ".join(sorted(self.capabilities)) or "none"
        kind = f"driver {self.where!r}" if self.driver else f"{self.impl} ({self.where})"
        return f"implementation under test: {kind}, capabilities: {caps}"


def module_parts(module: ModuleType) -> frozenset[str]:
    """The optional parts a Python module has: the capability of each option of `new` its constructor takes,
    what a driver of it announces (`wire.server.capabilities`: `hybrid` when it takes `layer_windows`,
    `page_tables` when its cache has the three calls of page tables for kernels)."""
    return frozenset(capabilities(module))
