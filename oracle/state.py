"""The model's state as a checker that walks it needs it: a copy, and a hashable key of what it shows.

The exhaustive explorer (`explorer/`) makes every call from every state on a copy of the model, and
merges two paths whose models answer every call alike from then on. Both depend on the model's fields,
so they live here, beside `model.py`, and the explorer never reads those fields by name.
"""

from __future__ import annotations

from typing import Hashable

from .model import FREE, RELEASED, Layers, ModelKVCache, Position

Bits = tuple[bytes, tuple[int, int, int]]  # an array's raw bits (C order) and its [H, T, D] shape


def copy(model: ModelKVCache) -> ModelKVCache:
    """An independent copy of `model`, sharing only what never changes: its sizes and profile, and the
    float16 arrays of its positions (never written in place), also those of the registry's blocks."""
    new = object.__new__(ModelKVCache)
    new.__dict__.update(model.__dict__)  # sizes, flags, the frozen profile, counters: values
    new.tokens = {s: [list(layer) for layer in layers] for s, layers in model.tokens.items()}
    new.group_tables = [{s: list(table) for s, table in tables.items()} for tables in model.group_tables]
    new.declared = {s: list(ids) for s, ids in model.declared.items()}
    # Registered: never changed in place
    new.registries = [{key: list(entries) for key, entries in registry.items()} for registry in model.registries]
    new.cached = list(model.cached)
    new.release_order = list(model.release_order)
    new.lifetime = list(model.lifetime)
    new.ended = list(model.ended)
    new.registration = model.registration.copy()
    return new


def canonical_ids(model: ModelKVCache) -> dict[int, int]:
    """Block ids renamed 0, 1, 2, ... by order of first appearance: tables (by sequence id), registry, cached."""
    names: dict[int, int] = {}
    for s in sorted(model.tables):
        for b in model.tables[s]:
            if b != RELEASED:
                names.setdefault(b, len(names))
    for key in sorted(model.registry):
        for entry in model.registry[key]:
            names.setdefault(entry.block, len(names))
    for b in model.cached:
        names.setdefault(b, len(names))
    return names


def layer_bytes(layer: list[Position]) -> bytes:
    """One layer's positions as bytes: each position's K bits, then its V bits."""
    return b"".join(p.k.tobytes() + p.v.tobytes() for p in layer)


def _layers_bytes(layers: Layers) -> tuple[bytes, ...]:
    """A registered block's positions (a block is registered full, so every one is there)."""
    return tuple(layer_bytes([p for p in layer if p is not None]) for layer in layers)


def _seq_bytes(model: ModelKVCache, s: int) -> tuple[tuple[int, bytes], ...]:
    """What a sequence's layers show from now on: each one's length and the positions gather returns (with a
    sliding window, the positions before the window are never shown again: lengths only grow)."""
    return tuple((len(model.tokens[s][li]), layer_bytes(model.window_of(s, li))) for li in range(model.n_layers))


def key(model: ModelKVCache, canonical: bool) -> Hashable:
    """The model's observable state, hashable; block ids renamed first (`canonical_ids`) when `canonical`. Two
    models with one key answer every call alike from then on (up to that renaming)."""
    if model.closed:
        return ("closed",)
    names = canonical_ids(model) if canonical else None

    def rename(b: int) -> int:
        return names[b] if names is not None else b

    seqs = tuple(
        (s, tuple(b if b == RELEASED else rename(b) for b in model.tables[s]), _seq_bytes(model, s), tuple(model.declared[s]))
        for s in sorted(model.tables)
    )
    registry = tuple(
        sorted((k, tuple((rename(e.block), _layers_bytes(e.layers)) for e in entries)) for k, entries in model.registry.items())
    )
    # under reuse=release-order, where each cached block stands among the unheld ones (free ones are alike)
    order = tuple(-1 if b is FREE else rename(b) for b in model.release_order) if model.profile.reuse == "release-order" else ()
    return (seqs, registry, tuple(rename(b) for b in model.cached), model.evictions, order, model.registration.state())


def gather_bits(model: ModelKVCache, s: int, layer: int) -> tuple[Bits, Bits]:
    """The raw bits and shape of gather(s, layer), K then V, without the checks of a call: with one head,
    the positions' bits joined (no stacking is needed)."""
    toks = model.window_of(s, layer)
    shape = (model.n_kv_heads, len(toks), model.d_head)
    if model.n_kv_heads == 1:
        return (b"".join(p.k.tobytes() for p in toks), shape), (b"".join(p.v.tobytes() for p in toks), shape)
    k, v = model.gather(s, layer)
    return (k.tobytes(), shape), (v.tobytes(), shape)


def positions(model: ModelKVCache, s: int, layer: int) -> int:
    """How many positions sequence s holds in `layer`: 0 for a sequence or layer that is not there, or
    once closed (what a call would be made with, not a call: nothing is checked)."""
    if model.closed or s not in model.tables or not 0 <= layer < model.n_layers:
        return 0
    return len(model.tokens[s][layer])
