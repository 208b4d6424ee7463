"""The kinds of layer a cache holds: each kind's rules in one place, one group of layers per window.

A cache's layers with the same window form a group (CONTRACT.md, "Hybrid models"); each group has its
own table per sequence and, with prefix caching, its own keys, over the cache's one pool. What differs
between the kinds is three rules, each a method here, and nothing else:

- which positions `gather` shows (`visible_from`),
- which table entries a sequence lets go of while it lives (`released_before`),
- which of a hit's first k blocks the group needs registered (`hit`, through `PrefixIndex.hit`'s `need`).

`FullAttention` shows every position and releases nothing; `SlidingWindow` shows the window and releases
what no window of its layers reaches (vLLM's FullAttentionManager and SlidingWindowManager). The cache
(cache.py) coordinates the groups: one capacity check, the common hit, the order of `free`.
"""

from __future__ import annotations

from typing import Sequence

from .prefix import Node, PrefixIndex


class FullAttention:
    """A group of full-attention layers: `layers` (indices into the cache's layers), blocks of `block_size`."""

    window: int | None = None
    need: int | None = None  # the blocks a hit must have registered before its end (None: all of them)

    def __init__(self, layers: tuple[int, ...], block_size: int, prefix_caching: bool) -> None:
        self.layers = layers
        self.block_size = block_size
        self.index = PrefixIndex(block_size) if prefix_caching else None  # this group's keys

    def visible_from(self, length: int) -> int:
        """The first position `gather` shows of a layer of `length` positions: every one."""
        return 0

    def released_before(self, shortest: int) -> int:
        """How many first table entries are released once every layer of the group holds `shortest` positions:
        none, ever."""
        return 0

    def hit(self, tokens: Sequence[int], most: int) -> tuple[list[Node], int]:
        """The nodes of the longest hit of at most `most` blocks this group can serve, and how many of the first
        it skips (`PrefixIndex.hit`)."""
        assert self.index is not None
        return self.index.hit(tokens, self.need, most)


class SlidingWindow(FullAttention):
    """A group of layers whose token at position p attends to positions p-W+1 .. p (`window` W)."""

    def __init__(self, layers: tuple[int, ...], block_size: int, prefix_caching: bool, window: int) -> None:
        super().__init__(layers, block_size, prefix_caching)
        self.window = window
        self.need = -(-(window - 1) // block_size)  # the blocks the window of a hit's next token reaches

    def visible_from(self, length: int) -> int:
        """The window: the W - 1 positions before the next one."""
        assert self.window is not None
        return max(0, length - self.window + 1)

    def released_before(self, shortest: int) -> int:
        """Entries i with (i+1)*B <= shortest - W + 1: every position before every layer's window."""
        assert self.window is not None
        return max(0, shortest - self.window + 1) // self.block_size


Group = FullAttention  # a group of either kind


def make_groups(windows: Sequence[int | None], block_size: int, prefix_caching: bool) -> list[Group]:
    """One group for each distinct window in `windows` (one entry a layer), in the order of their first layers."""
    groups: list[Group] = []
    for window in dict.fromkeys(windows):
        layers = tuple(i for i, w in enumerate(windows) if w == window)
        if window is None:
            groups.append(FullAttention(layers, block_size, prefix_caching))
        else:
            groups.append(SlidingWindow(layers, block_size, prefix_caching, window))
    return groups
