"""paged's coordinator never asks a group's kind (issue 50): cache.py and fast.py reach each group's
rules through `Group`'s methods only, so a new kind of group is a subclass in groups.py and nothing else.

Read from the sources: no name of a kind (`FullAttention`, `SlidingWindow`), no `isinstance` and no
attribute only one kind has (`.window`, `.need`, `.released_before`) in either module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.assertions import assert_equal

PAGED = Path(__file__).resolve().parents[2] / "paged"
KINDS = {"FullAttention", "SlidingWindow", "isinstance"}  # names
ONE_KIND = {"window", "need", "released_before"}  # attributes


@pytest.mark.parametrize("module", ["cache.py", "fast.py"])
def test_the_coordinator_never_asks_a_groups_kind(module: str) -> None:
    tree = ast.parse((PAGED / module).read_text())
    asked = sorted(
        f"line {node.lineno}: {name}"
        for node in ast.walk(tree)
        for name in [node.id if isinstance(node, ast.Name) else "." + node.attr if isinstance(node, ast.Attribute) else None]
        if name in KINDS or name is not None and name[1:] in ONE_KIND
    )
    assert_equal(f"the names of one kind in paged/{module}", asked, [], "ast.walk over the module")
