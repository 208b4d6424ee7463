"""The model's side of the walk: the oracle made and cloned, an error's kind, the state key that merges
paths, what the model's observables are, and the table checkers (exact, or up to a renaming of ids)."""

from __future__ import annotations

import copy
import importlib
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..diff import list_difference
from .alphabet import Geometry

Tables = Mapping[int, Sequence[int]]
# check_tables(want, got, carry, released) -> (what differs or None, the carry for the next step).
# want: the oracle's tables of the live sequences, got: the port's; carry: what the checker keeps
# along one path (None at the root); released: the oracle's block ids whose lifetime ended in this call.
TableCheck = Callable[[Tables, Tables, Any, Sequence[int]], tuple["str | None", Any]]
CLOSED: Sequence[int] = ("closed",)  # type: ignore[assignment]  # observe a closed cache


def oracle(name: str = "oracle") -> Any:
    """The oracle package (the model), imported by name: it is not type-checked (mypy --strict paged wire)."""
    return importlib.import_module(name)


def new_model(g: Geometry, profile: Any) -> Any:
    """The oracle for geometry g under `profile` (an `oracle.profile.Profile`), empty: the one place the
    explorer makes one."""
    return oracle().ModelKVCache(*g.sizes, profile=profile, **({"prefix_caching": True} if g.prefix_caching else {}))


def parse_profile(text: Any) -> Any:
    """`OPTION=VALUE,...` (docs/CONTRACT.md, Profiles) as an `oracle.profile.Profile`; a Profile as it is."""
    if text is not None and not isinstance(text, str):
        return text
    return oracle("oracle.profile").parse(text or "")


def clone_model(model: Any) -> Any:
    """A copy of a ModelKVCache that shares only what never changes (its float16 token arrays and the
    registry's data); any attribute it does not know is deep-copied."""
    new = object.__new__(type(model))
    for name, val in model.__dict__.items():
        if name == "tokens":
            val = {s: [list(layer) for layer in layers] for s, layers in val.items()}
        elif name in ("tables", "declared"):
            val = {s: list(x) for s, x in val.items()}
        elif name == "registry":
            val = {key: list(entries) for key, entries in val.items()}
        elif name in ("cached", "release_order", "lifetime", "ended"):
            val = list(val)
        elif name == "profile":
            pass  # frozen
        elif not isinstance(val, (int, float, str, bool, tuple, type(None))):
            val = copy.deepcopy(val)
        new.__dict__[name] = val
    return new


def error_kind(exc: BaseException, out_of_blocks: type[BaseException]) -> str:
    """The wire's KIND of an exception (and type_error, which has no wire form)."""
    if isinstance(exc, out_of_blocks):
        return "out_of_blocks"
    if isinstance(exc, KeyError):
        return "unknown_sequence"
    if isinstance(exc, ValueError):
        return "invalid_argument"
    if isinstance(exc, TypeError):
        return "type_error"
    return f"internal ({type(exc).__name__}: {exc})"


def live_of(model: Any) -> Sequence[int]:
    return CLOSED if model.closed else sorted(model.tables)


def observations(model: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The calls that observe a state, in the order the explorer makes them."""
    if model.closed:
        return [("stats", ()), ("num_free_blocks", ())]
    out: list[tuple[str, tuple[Any, ...]]] = [("stats", ()), ("num_free_blocks", ())]
    for s in sorted(model.tables):
        out.append(("block_table", (s,)))
        for layer in range(model.n_layers):
            out += [("seq_len", (s, layer)), ("gather", (s, layer))]
    return out


def renaming_of(model: Any) -> dict[int, int]:
    """Block ids renamed 0, 1, 2, ... by order of first appearance: tables (by sequence id), registry, cached."""
    names: dict[int, int] = {}
    for s in sorted(model.tables):
        for b in model.tables[s]:
            names.setdefault(b, len(names))
    for key in sorted(model.registry):
        for b, _ in model.registry[key]:
            names.setdefault(b, len(names))
    for b in model.cached:
        names.setdefault(b, len(names))
    return names


def model_gather(model: Any, s: int, layer: int) -> tuple[tuple[bytes, tuple[int, int, int]], tuple[bytes, tuple[int, int, int]]]:
    """The raw bits (C order) and shape of the model's gather(s, layer), K then V: its tokens joined
    (with one head, no stacking is needed)."""
    toks = model.tokens[s][layer]
    shape = (model.n_kv_heads, len(toks), model.d_head)
    if model.n_kv_heads == 1:
        return (b"".join(k.tobytes() for k, _ in toks), shape), (b"".join(v.tobytes() for _, v in toks), shape)
    k, v = model.gather(s, layer)
    return (k.tobytes(), shape), (v.tobytes(), shape)


def layer_bytes(layer: list[tuple[np.ndarray, np.ndarray]]) -> bytes:
    return b"".join(k.tobytes() + v.tobytes() for k, v in layer)


def state_key(model: Any, canonical: bool) -> Any:
    """The model's observable state, hashable; block ids renamed first when `canonical`. Two models with one
    key answer every call alike from then on (up to that renaming): the walk merges them."""
    if model.closed:
        return ("closed",)
    names = renaming_of(model) if canonical else None

    def rename(b: int) -> int:
        return names[b] if names is not None else b

    seqs = tuple(
        (s, tuple(rename(b) for b in model.tables[s]), tuple(layer_bytes(layer) for layer in model.tokens[s]), tuple(model.declared[s]))
        for s in sorted(model.tables)
    )
    registry = tuple(
        sorted((key, tuple((rename(b), tuple(layer_bytes(layer) for layer in data)) for b, data in entries)) for key, entries in model.registry.items())
    )
    # under reuse=release-order, where each cached block stands among the unheld ones (free ones are alike)
    order = tuple(rename(b) if b in model.cached else -1 for b in model.release_order) if model.profile.reuse == "release-order" else ()
    return (seqs, registry, tuple(rename(b) for b in model.cached), model.evictions, order)


# -- table checkers ---------------------------------------------------------------------------------


def exact_tables(want: Tables, got: Tables, carry: Any, released: Sequence[int]) -> tuple[str | None, Any]:
    """allocation=lowest-free: every table equal, id for id."""
    for s in want:
        if list(got[s]) != list(want[s]):
            return f"block_table({s}){list_difference(list(got[s]), list(want[s]))}", carry
    return None, carry


def renaming(want: Tables, got: Tables, carry: Any, released: Sequence[int], *, num_blocks: int) -> tuple[str | None, Any]:
    """allocation=any: tables equal up to a renaming of block ids bound for each block's lifetime, every id
    in the pool (`oracle.renaming.BlockNames`). carry: the names along this path, copied at every step (paths branch)."""
    names = carry.copy() if carry is not None else oracle("oracle.renaming").BlockNames(num_blocks)
    for m in released:
        names.release(m)
    for s in sorted(want):
        problem = names.check(f"block_table({s})", list(got[s]), list(want[s]))
        if problem is not None:
            return problem, carry
    return None, names
