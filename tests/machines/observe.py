"""What a machine's example reached, seen from the oracle: the behaviours its coverage is measured in.

Each behaviour is derived from the model alone (its state before and after a call, or what
the call returned or raised), never from the cache under test, so an example reaches the same
behaviours whatever implementation is under test (under one profile). `Observer` watches one
example; each behaviour it reaches is also a Hypothesis `event` (`--hypothesis-show-statistics`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import event
from hypothesis.errors import InvalidArgument

from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks

# behaviour -> what it means (the coverage table's rows, in this order)
BEHAVIOURS: dict[str, str] = {
    "copy on write": "an append replaced a shared block of the writer's table by a copy",
    "fork": "a fork succeeded",
    "OutOfBlocks": "a call raised OutOfBlocks",
    "layers diverging": "after a step, a live sequence's layers had different lengths",
    "hit": "add_seq served positions from the cache",
    "hit on a duplicated key": "add_seq served a block under a key that a second block was filled under earlier",
    "eviction": "an append evicted a cached block",
    "hit, fork, copy filled": "a block copied on write in a line of forks from a sequence that got a hit became full",
    "copy on write, fork and hit": "the example reached all three (in any order)",
    "window release": "an append let go of a block its sequence's window no longer reaches (its entry became -1)",
    "windowed hit": "add_seq served a prompt whose first entries are -1: the window needs only the blocks after them",
    "release beside a held entry": "hybrid: an append let go of a window group's entry i while another group's table holds a block at i",
    "hit cut by a group": "hybrid: add_seq served fewer blocks than one group alone could serve (the others could not)",
}
TOGETHER = ("copy on write", "fork", "hit")
CHANGES = ("add_seq", "extend", "fork", "append", "free")  # the calls that change the model


@dataclass
class Before:
    """What a call needs remembered of the model to tell, afterwards, what it did."""

    name: str
    args: tuple[Any, ...]
    tables: dict[int, list[int]]  # group 0's
    evictions: int
    groups: list[dict[int, list[int]]] = field(default_factory=list)  # every group's tables
    full: int = 0  # append: the writer's full blocks (every layer written to its end)
    keys: dict[tuple[int, ...], list[int]] = field(default_factory=dict)  # append: each key's blocks
    cached: list[int] = field(default_factory=list)  # append: the cached blocks


def full_blocks(model: ModelKVCache, seq: int) -> int:
    """How many of `seq`'s blocks are full: every layer written to the block's end."""
    return min(model.length(seq, layer) for layer in range(model.n_layers)) // model.block_size


class Observer:
    """The behaviours one example reached; `before` and `after` go around every call made on the model."""

    def __init__(self) -> None:
        self.reached: set[str] = set()
        self.duplicated: set[tuple[int, ...]] = set()  # keys a second block was filled under
        self.hit_line: set[int] = set()  # live sequences that got a hit, and their forks (and theirs)
        self.copies: set[tuple[int, int, int]] = set()  # (seq, index, block) copied on write in hit_line

    def reach(self, behaviour: str) -> None:
        assert behaviour in BEHAVIOURS, behaviour
        if behaviour in self.reached:
            return
        self.reached.add(behaviour)
        try:
            event(f"reached: {behaviour}")
        except InvalidArgument:  # not inside a Hypothesis test (a machine driven by hand)
            pass
        if self.reached.issuperset(TOGETHER):
            self.reach("copy on write, fork and hit")

    def before(self, model: ModelKVCache | None, name: str, args: tuple[Any, ...]) -> Before | None:
        if model is None or name not in CHANGES:
            return None
        groups = [{s: list(t) for s, t in tables.items()} for tables in model.group_tables]
        seen = Before(name, args, groups[0], model.evictions, groups)
        seq = args[0] if args else None
        if name == "append" and isinstance(seq, (int, np.integer)) and not isinstance(seq, bool) and seq in model.tables:
            seen.full = full_blocks(model, seq)
            seen.keys = {key: [b for b, _ in entries] for key, entries in model.registry.items()}
            seen.cached = list(model.cached)
        return seen

    def after(self, model: ModelKVCache, seen: Before | None, outcome: Any) -> None:
        """`outcome`: what the model returned, or the exception it raised."""
        if seen is None:
            return
        if isinstance(outcome, ModelOutOfBlocks):
            self.reach("OutOfBlocks")
        if isinstance(outcome, BaseException):
            return
        if model.evictions > seen.evictions:
            self.reach("eviction")
        if seen.name == "fork":
            self.reach("fork")
            if seen.args[0] in self.hit_line:
                self.hit_line.add(int(seen.args[1]))
        elif seen.name == "add_seq":
            self.added(model, int(seen.args[0]), outcome)
        elif seen.name == "free":
            self.hit_line.discard(int(seen.args[0]))
            self.copies = {c for c in self.copies if c[0] != seen.args[0]}
        elif seen.name == "append":
            self.appended(model, int(seen.args[0]), seen)

    def added(self, model: ModelKVCache, seq: int, served: int) -> None:
        if not served:
            return
        self.reach("hit")
        if any(tables[seq][0] == -1 for tables in model.group_tables):
            self.reach("windowed hit")
        tokens, k = model.declared[seq], served // model.block_size
        more = range(k + 1, (len(tokens) - 1) // model.block_size + 1)
        if any(model.can_serve(g, tokens, j) for g in range(len(model.group_windows)) for j in more):
            self.reach("hit cut by a group")
        self.hit_line.add(seq)
        keys = {tuple(model.declared[seq][: (i + 1) * model.block_size]) for i in range(served // model.block_size)}
        if keys & self.duplicated:
            self.reach("hit on a duplicated key")

    def appended(self, model: ModelKVCache, seq: int, seen: Before) -> None:
        for g, tables in enumerate(model.group_tables):
            before, now = seen.groups[g][seq], tables[seq]
            released = [i for i in range(len(before)) if before[i] != -1 and now[i] == -1]
            if released:
                self.reach("window release")
            others = [t[seq] for h, t in enumerate(model.group_tables) if h != g]
            if any(i < len(t) and t[i] != -1 for i in released for t in others):
                self.reach("release beside a held entry")
        old, table = seen.tables[seq], model.tables[seq]
        copied = [i for i in range(len(old)) if table[i] not in (old[i], -1)]
        if copied:
            self.reach("copy on write")
        if seq in self.hit_line:
            self.copies.update((seq, i, table[i]) for i in copied)
        full = full_blocks(model, seq)
        if any(s == seq and i < full and table[i] == b for s, i, b in self.copies):
            self.reach("hit, fork, copy filled")
        evicted = {b for b in seen.cached if b in table}
        for i in range(seen.full, full):
            key = tuple(model.declared[seq][: (i + 1) * model.block_size])
            if set(seen.keys.get(key, ())) - {table[i]} - evicted:
                self.duplicated.add(key)

    def stepped(self, model: ModelKVCache | None) -> None:
        """After a step: the state the invariant compares and the next step starts from."""
        if model is None or model.closed or "layers diverging" in self.reached:  # nothing more to reach here
            return
        if any(len({model.length(s, layer) for layer in range(model.n_layers)}) > 1 for s in model.tables):
            self.reach("layers diverging")
