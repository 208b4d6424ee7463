"""What differs, in the suite's one format: `what=got, but should be want [call]`.

A call's answer is named `answer` (`answer=ok, but should be err invalid_argument [append(0, 2, T=1)]`);
an observable by the call that reads it, after the call that made the state
(`gather(0, 1) k[head=0, pos=1, dim=0]=0x4400 (4), but should be 0x4600 (6) (1 of 4 values differ)
[gather(0, 1), after fork(0, 1)]`). Lists and arrays are reduced to their first differing entry.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from oracle.model import ModelKVCache
from wire.codec import ProtocolError
from wire.diff import array_difference, shorten
from wire.transcript import gather_difference

from .alphabet import Action, describe
from .oracle_side import CLOSED

STATS = ("free", "used", "cached", "evictions")


def answer_text(answer: tuple[str, Any]) -> str:
    """An answer as the wire says it: `ok`, `ok 2`, `err out_of_blocks`."""
    status, value = answer
    return f"{status} {value}" if value is not None else status


def call_difference(action: Action, got: tuple[str, Any], want: tuple[str, Any]) -> str:
    """A call answered otherwise than the model does."""
    return f"answer={answer_text(got)}, but should be {answer_text(want)} [{describe(action)}]"


def observables(live: Sequence[int], n_layers: int, wire: bool) -> list[tuple[str, str]]:
    """(what, the call that reads it) of each entry of an observation, in order (ports.py's layout)."""
    if live is CLOSED:
        return [("stats() after close", "stats()"), ("num_free_blocks() after close", "num_free_blocks()")]
    names = [("stats()", "stats()"), ("num_free_blocks()", "num_free_blocks()")]
    for s in live:
        names.append((f"block_table({s})" if wire else f"block_table({s}).dtype", f"block_table({s})"))
        for layer in range(n_layers):
            read = f"gather({s}, {layer})"
            names.append((f"seq_len({s}, {layer})", f"seq_len({s}, {layer})"))
            names += [(read, read)] if wire else [(f"{read} k", read), (f"{read} v", read)]
    return names


def first_difference(got: Any, want: Any, model: ModelKVCache, live: Sequence[int], after: str) -> str:
    """Which observable differs first, and how; `after`: the call (or calls) that made the state."""
    wire = isinstance(want[0], str)  # a driver's answers are text; a module's, values
    if len(got) != len(want):
        return f"observing the state={shorten(str(got[0]), 200)}, but should be {len(want)} answers [observing, after {after}]"
    for (what, read), g, w in zip(observables(live, model.n_layers, wire), got, want):
        if g != w:
            how = entry_difference(what, g, w, model) if not wire else wire_difference(what, g, w, model)
            return f"{how} [{read}, after {after}]"
    return f"observing the state={shorten(str(got), 200)}, but should be {shorten(str(want), 200)} [observing, after {after}]"


def entry_difference(what: str, got: Any, want: Any, model: ModelKVCache) -> str:
    """One observable of a module's observation: a stats tuple, an int, a dtype or a gathered array."""
    if what.endswith(".dtype") and isinstance(got, str) and isinstance(want, str):
        return f"{what}={np.dtype(got).name}, but should be {np.dtype(want).name}"
    if what.startswith("stats()") and isinstance(got, tuple) and isinstance(want, tuple):
        for key, g, w in zip(STATS, got, want):
            if g != w:
                return f'{what}["{key}"]={g}, but should be {w}'
    if isinstance(want, tuple) and len(want) == 4 and isinstance(want[3], bytes) and isinstance(got, tuple) and len(got) == 4:
        shape, char, contiguous, raw = got
        if np.dtype(char) != np.dtype(want[1]):
            return f"{what}.dtype={np.dtype(char)}, but should be {np.dtype(want[1])}"
        if tuple(shape) != tuple(want[0]):
            return f"{what}.shape={tuple(shape)}, but should be {tuple(want[0])}"
        if contiguous != want[2]:
            return f"{what}.flags.c_contiguous={contiguous}, but should be {want[2]}"
        mine, theirs = (np.frombuffer(r, dtype=np.dtype(c)).reshape(s) for s, c, _, r in (got, want))
        return f"{what}{array_difference(mine, theirs)}"
    return f"{what}={shorten(repr(got), 200)}, but should be {shorten(repr(want), 200)}"


def wire_difference(what: str, got: str, want: str, model: ModelKVCache) -> str:
    """One observable of a driver's observation: its answer as text (a gather's payloads as arrays)."""
    g, w = got.split(" "), want.split(" ")
    if what.startswith("gather(") and len(g) == len(w) == 4 and g[0] == w[0] == "ok":
        try:
            how = gather_difference(g[1:], w[1:], model.n_kv_heads, model.d_head)
            if how:
                return f"{what} {how}"
        except ProtocolError as exc:
            return f"{what}={shorten(got)!r} (does not parse: {exc}), but should be {shorten(want)!r}"
    if what.startswith("stats()") and len(g) == len(w) == 5 and g[0] == w[0] == "ok":
        for gi, wi in zip(g[1:], w[1:]):
            if gi != wi:
                key, _, value = gi.partition("=")
                return f'{what}["{key}"]={value}, but should be {wi.partition("=")[2]}'
    return f"{what}={shorten(got)!r}, but should be {shorten(want)!r}"
