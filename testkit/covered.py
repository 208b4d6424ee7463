"""What the whole gate's early steps ran before its conformance run, so that the run does not run it again.

The gate replays the conformance vectors and walks the explorer's quick geometries to a small depth before
the suite; it writes here (`Covered.write`) the vectors it replayed without a difference (or skipped for a
reason the replay names, as the suite would skip them) and the geometries it walked, without a failure, to
which depth. The suite, given the file (`--covered PATH`, tests/plugins/covered.py), deselects each test
marked as replaying one of those vectors (`vector(NAME)`) or walking one of those geometries to no more
than that depth (`walk(GEOMETRY, DEPTH)`), under the same implementation and profile; the record counts
them (`testkit.outcomes.Record.covered`) and the gate's verdict names the steps that ran them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Covered:
    """Vectors by file name; walks by the geometry's name (`explorer.Geometry.name`), with the depth walked."""

    vectors: set[str] = field(default_factory=set)
    walks: dict[str, int] = field(default_factory=dict)

    def covers_vector(self, name: str) -> bool:
        return name in self.vectors

    def covers_walk(self, geometry: str, depth: int) -> bool:
        return self.walks.get(geometry, -1) >= depth

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"vectors": sorted(self.vectors), "walks": self.walks}, indent=1), encoding="utf-8")


def read(path: str | Path) -> Covered:
    """The file the gate wrote; ValueError (or OSError) when it is not one."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    vectors, walks = data["vectors"], data["walks"]
    if not isinstance(vectors, list) or not isinstance(walks, dict):
        raise ValueError(f"{path}: not a record of covered vectors and walks")
    return Covered({str(v) for v in vectors}, {str(g): int(d) for g, d in walks.items()})
