"""Whether an adapter built without the capability it adds behaves as its base adapter, shown, not inferred:
both driven side by side through one script of calls, every answer compared (mutants/engines/runner.py narrows
an adapter's gate to the tests that need the capability on it).

The script is conformance vectors' requests (ci/vectors): seeded random sessions with prefix caching on and
off (prompts, decode steps, forks, copy on write, frees, OutOfBlocks, every observable after every call:
stats, tables, lengths, gathers) and two scripted ones (a hit, release and eviction; OutOfBlocks counting
cached blocks). Each request goes to both adapters through the driver's own dispatch (wire.server), so an
answer is its response line, an error's kind and text included. The base's answers must show what the
narrowing skips (a prefix hit, a fork, OutOfBlocks, an eviction), else the script proves nothing and the
check refuses. Equal on the script is what is shown: behaviour off the script is not.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from wire.server import Dispatcher

SCRIPT = ("prefix-random-1", "prefix-random-2", "random-1", "prefix-hit-release-evict", "prefix-out-of-blocks-counts-cached")
VECTORS = Path(__file__).resolve().parents[2] / "ci" / "vectors"


def requests(name: str) -> list[str]:
    """A vector's request lines, in order (its recorded answers, the oracle's, are not used)."""
    return [line[2:] for line in (VECTORS / f"{name}.txt").read_text(encoding="utf-8").splitlines() if line.startswith("> ")]


def shown(request: str, answer: str) -> set[str]:
    """What the base's answer to one request shows of the behaviour a narrowing skips."""
    seen = set()
    if request.startswith("add_seq ") and answer.startswith("ok ") and answer != "ok 0":
        seen.add("a prefix hit")
    if request.startswith("fork ") and answer == "ok":
        seen.add("a fork")
    if answer.startswith("err out_of_blocks"):
        seen.add("OutOfBlocks")
    if request.startswith("stats ") and answer.startswith("ok ") and "evictions=0" not in answer:
        seen.add("an eviction")
    return seen


NEEDED = {"a prefix hit", "a fork", "OutOfBlocks", "an eviction"}


def first_difference(mine: ModuleType, base: ModuleType) -> str:
    """"" when `mine` (built without the capability: no option of it in any request) answers every request of
    the script as `base` does and the base's answers show NEEDED; else the first differing answer, in the one
    format, or what the script did not show."""
    seen: set[str] = set()
    for name in SCRIPT:
        ours, theirs = Dispatcher(mine, mine.__name__), Dispatcher(base, base.__name__)
        ours.handle("hello 1"), theirs.handle("hello 1")  # the greeting names each adapter and what it announces
        for number, request in enumerate(requests(name), 1):
            got, want = ours.handle(request)[0], theirs.handle(request)[0]
            if got != want:
                return f"response={got!r}, but should be {want!r}, {base.__name__}'s [{name}, request {number}: {request}]"
            seen |= shown(request, want)
    missing = sorted(NEEDED - seen)
    return f"the script showed no {', no '.join(missing)} on {base.__name__}: it proves nothing of them" if missing else ""
