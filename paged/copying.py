"""Deep copies of a cache that are faithful and fast, for the exhaustive explorer (wire/explore.py),
which copies a state instead of replaying the calls that made it.

A plain `copy.deepcopy` of a `PagedKVCache` is not faithful: `_layers` holds views of the pools,
and a deep copy makes them arrays of their own, so a copy would write through one and read
through the other. `copy_cache` copies the pools and makes the copy's `_layers` views of the
copy's pools. The others are the same copy as the default, by hand, several times faster:
a walk to depth 6 makes tens of thousands.

Each is a class's `__deepcopy__`. Every line here does what the default deep copy does, only
faster (but `_layers`), so a mutant of it would make the same copy or a broken one:
`pyproject.toml` keeps this file out of mutmut, as paged/protocol.py.
"""

from __future__ import annotations

import copy
from typing import Any


def copy_cache(cache: Any, memo: dict[int, Any]) -> Any:
    """PagedKVCache: the pools copied, `_layers` views of the copy's pools, sequences by hand (their
    prefix nodes are the copied index's, through memo), the rest deep-copied."""
    new = object.__new__(type(cache))
    memo[id(cache)] = new
    for name, val in cache.__dict__.items():
        if name == "_seqs":
            val = {s: type(q)(q.table.copy(), q.lens.copy(), q.tokens.copy(), [copy.deepcopy(n, memo) for n in q.nodes]) for s, q in val.items()}
        elif name in ("_k", "_v"):
            val = val.copy()
        elif name != "_layers" and not isinstance(val, (int, bool)):
            val = copy.deepcopy(val, memo)
        new.__dict__[name] = val
    if "_layers" in cache.__dict__:
        new._layers = list(zip(new._k, new._v))
    return new


def copy_allocator(alloc: Any, memo: dict[int, Any]) -> Any:
    """BlockAllocator (or a subclass's slots too): its lists and ordered sets copied; the eviction
    callback is the copied index's."""
    new = object.__new__(type(alloc))
    memo[id(alloc)] = new
    for cls in type(alloc).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if hasattr(alloc, name):
                val = getattr(alloc, name)
                if name == "_on_evict":
                    val = copy.deepcopy(val, memo)
                elif hasattr(val, "copy"):
                    val = val.copy()
                setattr(new, name, val)
    return new


def copy_index(index: Any, memo: dict[int, Any]) -> Any:
    """PrefixIndex: the tree node by node (each copy in memo, so that a sequence's nodes become the copy's)."""
    new = object.__new__(type(index))
    memo[id(index)] = new
    new.block_size = index.block_size
    new.root = _copy_node(index.root, None, memo)
    new._node_of = {b: copy.deepcopy(n, memo) for b, n in index._node_of.items()}
    return new


def _copy_node(node: Any, parent: Any, memo: dict[int, Any]) -> Any:
    new = object.__new__(type(node))
    memo[id(node)] = new
    new.parent, new.tokens, new.block, new.dead = parent, node.tokens, node.block, node.dead
    new.children = {key: _copy_node(child, new, memo) for key, child in node.children.items()}
    return new
