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
from .observation import CLOSED, STATS, Answer, Observation, Read, reads


def answer_text(answer: Answer) -> str:
    """An answer as the wire says it: `ok`, `ok 2`, `err out_of_blocks`."""
    status, value = answer
    return f"{status} {value}" if value is not None else status


def call_difference(action: Action, got: Answer, want: Answer) -> str:
    """A call answered otherwise than the model does."""
    return f"answer={answer_text(got)}, but should be {answer_text(want)} [{describe(action)}]"


def first_difference(got: Observation, want: tuple[Any, ...], model: ModelKVCache, live: Sequence[int], after: str) -> str:
    """Which observable differs first, and how (`observation.reads` names them); `after`: the call (or
    calls) that made the state."""
    values = got.values
    if len(values) != len(want):
        return f"observing the state={shorten(str(values[0]), 200)}, but should be {len(want)} answers [observing, after {after}]"
    for read, g, w in zip(reads(live, model.n_layers), values, want):
        if g != w:
            what = f"{read} after close" if live is CLOSED else str(read)
            how = wire_difference(read, what, g, w, model) if got.wire else value_difference(read, what, g, w)
            return f"{how} [{read}, after {after}]"
    return f"observing the state={shorten(str(values), 200)}, but should be {shorten(str(want), 200)} [observing, after {after}]"


def value_difference(read: Read, what: str, got: Any, want: Any) -> str:
    """One read of a module's observation: a stats tuple, an int, a table's dtype or a gather's (k, v)."""
    if read.method == "block_table" and isinstance(got, str) and isinstance(want, str):
        return f"{what}.dtype={np.dtype(got).name}, but should be {np.dtype(want).name}"
    if read.method == "gather" and isinstance(got, tuple) and isinstance(want, tuple) and len(got) == len(want) == 2:
        for name, g, w in zip("kv", got, want):
            if g != w:
                return array_entry_difference(f"{what} {name}", g, w)
    return entry_difference(what, got, want)


def array_entry_difference(what: str, got: Any, want: Any) -> str:
    """A gathered array, held as (shape, dtype char, C-contiguous, bytes)."""
    if isinstance(got, tuple) and len(got) == 4:
        shape, char, contiguous, raw = got
        if np.dtype(char) != np.dtype(want[1]):
            return f"{what}.dtype={np.dtype(char)}, but should be {np.dtype(want[1])}"
        if tuple(shape) != tuple(want[0]):
            return f"{what}.shape={tuple(shape)}, but should be {tuple(want[0])}"
        if contiguous != want[2]:
            return f"{what}.flags.c_contiguous={contiguous}, but should be {want[2]}"
        mine, theirs = (np.frombuffer(r, dtype=np.dtype(c)).reshape(s) for s, c, _, r in (got, want))
        return f"{what}{array_difference(mine, theirs)}"
    return entry_difference(what, got, want)


def entry_difference(what: str, got: Any, want: Any) -> str:
    """A stats tuple by its first differing key; anything else as it is."""
    if what.startswith("stats()") and isinstance(got, tuple) and isinstance(want, tuple):
        for key, g, w in zip(STATS, got, want):
            if g != w:
                return f'{what}["{key}"]={g}, but should be {w}'
    return f"{what}={shorten(repr(got), 200)}, but should be {shorten(repr(want), 200)}"


def wire_difference(read: Read, what: str, got: str, want: str, model: ModelKVCache) -> str:
    """One read of a driver's observation: its answer as text (a gather's payloads as arrays)."""
    g, w = got.split(" "), want.split(" ")
    if read.method == "gather" and len(g) == len(w) == 4 and g[0] == w[0] == "ok":
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
