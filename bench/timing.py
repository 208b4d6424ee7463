"""How a side is timed: warm memory, alternating sides, medians and minima, ratios."""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


def steady_malloc() -> str:
    """Ask glibc to keep freed memory (no trimming, no mmap below 32 MiB), if it is glibc.

    Otherwise each new output array of some sizes is fresh memory that the OS pages in,
    which costs more than the copy itself on a VM and changes with the order of sizes; with
    this, both sides of every comparison reuse warm memory alike.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        ok = libc.mallopt(m_trim_threshold, 2**30) and libc.mallopt(m_mmap_threshold, 32 * 2**20)
        return "glibc mallopt: keep freed memory" if ok else "mallopt refused"
    except (OSError, AttributeError):
        return "default malloc"


def last_level_cache() -> int:
    """The largest CPU cache's size in bytes (Linux sysfs), else 32 MiB.

    The prefill rows write a scratch buffer twice this size before each timed call, so that
    what a side touched in its set-up is no longer cached: a VM may report a large L3 (480 MiB
    on the project machine), where a fixed 64 MiB left the contiguous cache's freshly touched
    sequence in the cache, and made its write 1.5x faster than the paged one's.
    """
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes, default=32 * 2**20)


# -- timing -----------------------------------------------------------------------------------


def _noop() -> None:
    pass


@dataclass
class Side:
    """One side of a comparison: `run` is timed, `before` and `after` surround it untimed."""

    run: Callable[[], object]
    before: Callable[[], object] = _noop
    after: Callable[[], object] = _noop
    times: list[float] = field(default_factory=list)

    @property
    def minimum(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def race(a: Side, b: Side, repeats: int, warmup: int, floor: Side | None = None) -> tuple[Side, Side]:
    """Time a and b (and the floor, if given) call by call, alternating the order (a b f, f b a, ...);
    keep the calls after warm-up."""
    sides = (a, b) if floor is None else (a, b, floor)
    gc.collect()
    gc.disable()
    try:
        for i in range(warmup + repeats):
            for side in sides if i % 2 == 0 else sides[::-1]:
                side.before()
                t0 = time.perf_counter()
                side.run()
                elapsed = time.perf_counter() - t0
                side.after()
                if i >= warmup:
                    side.times.append(elapsed)
    finally:
        gc.enable()
    return a, b


@dataclass
class Result:
    key: str
    value: float
    paged: Side | None = None  # the paged side's timings, for the table
    ref: Side | None = None  # the side it is compared with
    ref_name: str = ""
    unit: str = ""  # what a timed call is, for the table
    per_paged: float = 1.0  # divide the paged times by this (tokens, say) before comparing and showing them
    per_ref: float = 1.0
    note: str = ""


def ratio(key: str, paged: Side, ref: Side, ref_name: str, unit: str, per_paged: float = 1.0,
          per_ref: float = 1.0) -> Result:
    """Median over median, each divided by its own `per` (tokens, say)."""
    value = (paged.median / per_paged) / (ref.median / per_ref)
    return Result(key, value, paged, ref, ref_name, unit, per_paged, per_ref)
