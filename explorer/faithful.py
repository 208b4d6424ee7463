"""Faithful copies of a Python module's cache, and the check that they are.

The explorer copies a state's cache instead of replaying the calls that made it: `snapshot` pickles it
once (a state has a dozen children), `restore` makes each copy from that. Pickling carries every field
of a plain object as it is, whatever its class says of copying (`__deepcopy__` is not asked), keeps
sharing and cycles, and here an array that is a view of another stays a view of the copy of that other
(pickle would make it an array of its own, so that a copy would write through one and read through the
other). A class with pickling hooks of its own is copied its way.

`difference(copied, replayed)` walks two caches side by side and names the first field that differs
(values, types, order, sharing, arrays' bits, layout and views): the walk compares sampled copies with
the same calls replayed on a fresh cache, so that a copy that is not faithful fails loudly instead of
repairing (or planting) a bug in every branch copied from it; a cache that cannot be pickled is
replayed instead.
"""

from __future__ import annotations

import ctypes
import io
import operator
import pickle
import types
from collections import OrderedDict, deque
from typing import Any, Callable

import numpy as np

# Values that never change: compared by value (functions and classes by identity).
ATOMIC = frozenset({int, float, bool, str, bytes, complex, type(None), range, type, types.FunctionType,
                    types.BuiltinFunctionType, type(Ellipsis), type(NotImplemented), np.float16, np.int64, np.int32, np.bool_})


def snapshot(x: Any) -> bytes:
    """x and everything it reaches, as bytes for `restore` (pickle's exceptions when it cannot be)."""
    out = io.BytesIO()
    _Pickler(out, protocol=4).dump(x)  # (5 would load an array as a view of the pickle's buffer)
    return out.getvalue()


def restore(snap: bytes) -> Any:
    """A new copy of what `snapshot` took."""
    return pickle.loads(snap)


def faithful_copy(x: Any) -> Any:
    """A copy of x and of everything it reaches (snapshot, then restore)."""
    return restore(snapshot(x))


class _Pickler(pickle.Pickler):
    """Arrays: a view of an array that owns its data is pickled as that view of its base; an array
    that owns its data, as itself (read-only stays read-only)."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is not np.ndarray or obj.dtype.hasobject:
            return NotImplemented
        base = obj.base
        if base is None:
            return NotImplemented if obj.flags.writeable else (_read_only, (obj.copy(order="K"),))
        if type(base) is np.ndarray and base.base is None:
            offset = address(obj) - address(base)
            step = base.strides[0] if base.ndim else 0
            if obj.flags.writeable and obj.dtype == base.dtype and obj.shape == base.shape[1:] and obj.strides == base.strides[1:] and step > 0 and offset % step == 0:
                return operator.getitem, (base, offset // step)  # base[i], made in C
            return _view, (base, offset, obj.shape, obj.dtype, obj.strides, obj.flags.writeable)
        return NotImplemented


def _view(base: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype[Any], strides: tuple[int, ...], writeable: bool) -> np.ndarray:
    view = np.ndarray(shape, dtype, base, offset, strides)
    if not writeable:
        view.flags.writeable = False
    return view


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def address(a: np.ndarray) -> int:
    """Where an array's first element is in memory (a fast path for writable arrays)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))  # type: ignore[arg-type]
    except (TypeError, ValueError, BufferError):
        return int(a.__array_interface__["data"][0])


_SLOTS: dict[type, tuple[str, ...]] = {}


def slots(cls: type) -> tuple[str, ...]:
    """The slot names of a class and its bases."""
    names = _SLOTS.get(cls)
    if names is None:
        found = []
        for k in cls.__mro__:
            declared = getattr(k, "__slots__", ())
            for n in (declared,) if isinstance(declared, str) else declared:
                if n.startswith("__") and not n.endswith("__"):
                    n = f"_{k.__name__.lstrip('_')}{n}"  # a private name, as Python mangles it
                if n not in ("__dict__", "__weakref__"):
                    found.append(n)
        names = _SLOTS[cls] = tuple(found)
    return names


def plain(cls: type) -> bool:
    """Whether object.__new__ makes a bare instance of cls (no C-level state of a builtin base)."""
    return cls.__new__ is object.__new__  # type: ignore[comparison-overlap]


# -- the check: two object graphs side by side ---------------------------------------------------------


def difference(got: Any, want: Any, where: str = "cache") -> str | None:
    """The first place two object graphs differ, as `where=got, but should be want`, or None."""
    return _Pair().walk(got, want, where)


class _Pair:
    """Objects of one graph paired with the other's, so that sharing and cycles are compared too."""

    def __init__(self) -> None:
        self.pairs: dict[int, int] = {}
        self.paired: set[int] = set()  # ids of the second graph's objects already paired
        self.keep: list[Any] = []  # every object paired, alive until the walk ends (so that ids stay theirs)

    def walk(self, a: Any, b: Any, where: str) -> str | None:
        ta, tb = type(a), type(b)
        if ta is not tb:
            return f"{where} is a {ta.__name__}, but should be a {tb.__name__}"
        if ta in ATOMIC:
            same = a is b or a == b or (repr(a) == repr(b) and ta is not float)
            if ta is float and a != a and b != b:
                same = True
            return None if same else f"{where}={a!r}, but should be {b!r}"
        seen = self.pairs.get(id(a))
        if seen is not None:
            return None if seen == id(b) else f"{where} is shared with another field in one, not in the other"
        if id(b) in self.paired:
            return f"{where} is shared with another field in one, not in the other"
        self.pairs[id(a)] = id(b)
        self.paired.add(id(b))
        self.keep += [a, b]
        if ta in (list, tuple, deque):
            if len(a) != len(b):
                return f"len({where})={len(a)}, but should be {len(b)}"
            return self.each(zip(a, b), lambda i: f"{where}[{i}]")
        if ta in (set, frozenset):
            return self.walk(list(a), list(b), f"list({where})")
        if ta in (dict, OrderedDict):
            if list(a) != list(b):
                return f"list({where})={list(a)!r}, but should be {list(b)!r}"
            keys = list(a)
            return self.each(((a[k], b[k]) for k in keys), lambda i: f"{where}[{keys[i]!r}]")
        if ta is types.MethodType:
            if a.__func__ is not b.__func__:
                return f"{where} is the method {a.__func__.__qualname__}, but should be {b.__func__.__qualname__}"
            return self.walk(a.__self__, b.__self__, f"{where}.__self__")
        if ta is np.ndarray:
            return self.array(a, b, where)
        if plain(ta):
            fa, fb = getattr(a, "__dict__", {}), getattr(b, "__dict__", {})
            if list(fa) != list(fb):
                return f"{where}'s fields are {list(fa)}, but should be {list(fb)}"
            for name in [*fa, *slots(ta)]:
                va, vb = getattr(a, name, _UNSET), getattr(b, name, _UNSET)
                problem = self.walk(va, vb, f"{where}.{name}")
                if problem:
                    return problem
            return None
        return None if a == b else f"{where}={a!r}, but should be {b!r} (a {ta.__name__}, compared with ==)"

    def each(self, pairs: Any, name: Callable[[int], str]) -> str | None:
        for i, (x, y) in enumerate(pairs):
            problem = self.walk(x, y, name(i))
            if problem:
                return problem
        return None

    def array(self, a: np.ndarray, b: np.ndarray, where: str) -> str | None:
        for what in ("dtype", "shape", "strides"):
            if getattr(a, what) != getattr(b, what):
                return f"{where}.{what}={getattr(a, what)}, but should be {getattr(b, what)}"
        if a.flags.writeable != b.flags.writeable:
            return f"{where}.flags.writeable={a.flags.writeable}, but should be {b.flags.writeable}"
        if (a.base is None) != (b.base is None):
            return f"{where} {'owns its data' if a.base is None else 'is a view'}, but should {'own its data' if b.base is None else 'be a view'}"
        if a.base is not None:
            problem = self.walk(a.base, b.base, f"{where}.base")
            if problem:
                return problem
            if isinstance(a.base, np.ndarray) and isinstance(b.base, np.ndarray):
                at, should = address(a) - address(a.base), address(b) - address(b.base)
                if at != should:
                    return f"{where} starts at byte {at} of its base, but should start at byte {should}"
        if a.tobytes() != b.tobytes():
            from wire.diff import array_difference

            return f"{where}{array_difference(a, b, axes='')}"
        return None


class _Unset:
    def __repr__(self) -> str:
        return "<not set>"


_UNSET = _Unset()
