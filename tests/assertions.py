"""The suite's one assertion format, in the manner of array-api-tests:

    {what}={got}, but should be {want} [{call}]

where a list or float16 array that differs is reduced to its first differing entry
(`block_table(0)[2]=5, but should be 3`, or head, position and dimension with both
values as bits and numbers). Helper frames are hidden from tracebacks.
"""

from __future__ import annotations

import re
from typing import Any, Callable, TypeVar

import numpy as np

from oracle.id_renaming import outside_pool
from wire.diff import array_difference, list_difference, shorten


def same_bits(a: Any, b: Any) -> bool:
    """Equal shape, dtype float16, and the very same float16 bit patterns (NaN and -0.0 included): of one dtype
    and shape, their bytes in C order are equal (one comparison, several times cheaper than array_equal)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype == np.float16 and a.shape == b.shape and a.tobytes() == b.tobytes()


def short(value: Any) -> str:
    return shorten(repr(value), 200)


def differs(got: Any, want: Any) -> str | None:
    """None when equal; else how: the first differing entry of a list, float16 array or dict (a snapshot)."""
    if isinstance(got, np.ndarray) or isinstance(want, np.ndarray):
        return array_difference(got, want)
    if isinstance(got, list) and isinstance(want, list):
        return list_difference(got, want)
    if isinstance(got, dict) and isinstance(want, dict) and got != want:
        for key in [*want, *(k for k in got if k not in want)]:
            if got.get(key, "<missing>") != want.get(key, "<missing>"):
                return f"[{key!r}]={short(got.get(key, '<missing>'))}, but should be {short(want.get(key, '<missing>'))}"
    return None if got == want else f"={short(got)}, but should be {short(want)}"


# What a differing block table means under the profile in force (set by the harness), said beside a table's ids
# that differ (`block_table(0)`, `block_table(0, 1)`, `[block_table(s) for s in (0, 1)]`) and nowhere else: not
# beside a table's memory (an aliasing check), its type or a count of its entries.
table_hint: Callable[[], str] = lambda: ""
_TABLE_IDS = re.compile(r"block_table\([^()]*\)|\[block_table\(\w+\) for \w+ in \([^()]*\)\]")


def message(what: str, got: Any, want: Any, call: str) -> str:
    how = differs(got, want)
    if how is None:
        how = f"={got!r}, but should be {want!r}"
    elif not how.startswith(("=", "[")):
        how = f" {how}"
    text = f"{what}{how} [{call}]"
    if _TABLE_IDS.fullmatch(what) and isinstance(got, list) and isinstance(want, list):
        text += f" ({table_hint()})"
    return text


PLAIN = (int, str, bool, dict)  # types for which `differs` is None exactly when got == want
EXACT_KINDS = "biuf"  # dtype kinds (of up to 8 bytes) whose arrays `differs` finds equal exactly when their bytes are


def plainly_equal(got: Any, want: Any) -> bool:
    """A shortcut for the passing path: True only when `differs` would be None, found without its entry by entry walk
    (False says nothing: `differs` decides)."""
    if type(got) is not type(want):
        return False
    if type(got) in PLAIN:
        return bool(got == want)
    return (
        type(got) is np.ndarray and got.dtype == want.dtype and got.dtype.kind in EXACT_KINDS and got.dtype.itemsize <= 8
        and got.shape == want.shape and got.tobytes() == want.tobytes()
    )


def assert_equal(what: str, got: Any, want: Any, call: str) -> None:
    """got == want; else the message names what, both values (or their first difference) and the call."""
    __tracebackhide__ = True
    if plainly_equal(got, want):
        return
    if differs(got, want) is not None:
        raise AssertionError(message(what, got, want, call))


def assert_same_bits(what: str, got: Any, want: Any, call: str) -> None:
    """Both float16 arrays of one shape with the very same bit patterns (NaN and -0.0 exact)."""
    __tracebackhide__ = True
    if not same_bits(got, want):
        raise AssertionError(message(what, got, want, call))


def assert_table(what: str, got: Any, want: Any, num_blocks: int, call: str) -> None:
    """A block table (a list): every id a block of the pool, 0 .. num_blocks-1 (under every profile), then the
    oracle's table."""
    __tracebackhide__ = True
    outside = outside_pool(what, got, num_blocks)
    if outside is not None:
        raise AssertionError(f"{outside} [{call}]")
    assert_equal(what, got, want, call)


def assert_served(got: Any, want: int, call: str) -> None:
    """add_seq's answer: an `int` (not None, not a bool, not a NumPy integer) and the oracle's, the positions
    served from the cache (0 with prefix caching off). The suite's one check of it: every add_seq it makes
    on the cache under test is checked here (or, sent ahead to a driver, by `wire.remote` with the oracle's
    answer)."""
    __tracebackhide__ = True
    assert_equal(f"type({call})", type(got).__name__, "int", call)
    assert_equal(call, got, want, f"{call}: the positions served from the cache")


Error = TypeVar("Error", bound=BaseException)


def assert_raises(error: type[Error], call: str, make: Callable[[], Any]) -> Error:
    """`make()`, the call written `call`, raises `error` (the oracle's or the contract's); returns it. Else the
    message says what the call did instead: returned a value, or raised another type."""
    __tracebackhide__ = True
    try:
        result = make()
    except error as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - another type is the port's answer, reported in the format
        raise AssertionError(f"{call} raised {type(exc).__name__}({short(str(exc))}), but should raise {error.__name__} [{call}]") from exc
    raise AssertionError(f"{call} returned {short(result)}, but should raise {error.__name__} [{call}]")


def assert_no_difference(difference: str | None, context: str = "") -> None:
    """A difference the suite's own machinery found and worded in the format (a transcript replay's Mismatch,
    the renaming's check, the explorer's report): None passes; else it is the failure, with `context` after it."""
    __tracebackhide__ = True
    if difference is not None:
        raise AssertionError(f"{difference}{context}")
