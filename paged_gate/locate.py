"""Where the gate finds what only a source checkout has (the planted mutants, mutmut), and this
installation's scripts; the suite itself is found by `testkit.locate`."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

from testkit.locate import SHIPPED

CHECKOUT = Path(__file__).resolve().parent.parent


def checkout() -> Path | None:
    """The source checkout, when the gate runs from one (its planted mutants and mutmut scoring
    need the sources); None for an installed gate."""
    return None if SHIPPED.is_dir() or not (CHECKOUT / "mutants" / "__main__.py").is_file() else CHECKOUT


def scripts_first(path: str) -> str:
    """A PATH with this installation's scripts folder first, so that `exec:paged-driver` names the
    driver installed beside the gate even when its venv is not activated."""
    scripts = sysconfig.get_path("scripts")
    parts = [p for p in path.split(os.pathsep) if p and p != scripts]
    return os.pathsep.join([scripts, *parts])
