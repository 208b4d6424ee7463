"""The groups of layers a cache holds: each keeps its sequences' tables and its kind's rules.

A cache's layers with the same window form a group (CONTRACT.md, "Hybrid models"). A group owns, per
live sequence id, its block table (`tables`, vLLM's `req_to_blocks`) and the prefix nodes of the
table's full blocks (`nodes`), and its own keys (`index`), over the cache's one pool and allocator.
`Group` is what every kind does alike: a sequence's table made (`add`, from a hit), shared by a fork
(`fork`), let go of (`free`), its full blocks registered (`register`), its first entries released
(`_release_first`). What differs between the kinds is three rules, each kind's methods and nothing else:

- which positions `gather` shows (`visible_from`),
- which table entries a sequence lets go of while it lives (`release`),
- which blocks of a hit the group needs registered (`hit`, through `PrefixIndex.hit`'s `need`).

`FullAttention` shows every position, releases nothing and needs every key of a hit; `SlidingWindow`
shows the window, releases what no window of its layers reaches and needs only the keys of a hit's last
blocks (vLLM's FullAttentionManager and SlidingWindowManager; the Rust port's `trait Kind`). A new
kind is a new subclass of `Group` and its line in `make_groups`, which picks each group's kind from
its window. The cache (cache.py) coordinates the groups: one capacity check, the common hit, the
order of `free`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable, Sequence

from .allocator import BlockAllocator
from .prefix import Node, PrefixIndex

RELEASED = -1  # a table entry whose block the group let go while the sequence lives (block_table shows it as it is)


class Group(ABC):
    """A group of layers of one kind: `layers` (indices into the cache's layers), blocks of `block_size`
    taken from the cache's allocator `alloc`, each live sequence's table (`tables`) and, with prefix
    caching, the nodes of its full blocks (`nodes`) and the group's keys (`index`: without prefix
    caching nothing registers, and it stays empty)."""

    def __init__(self, layers: tuple[int, ...], block_size: int, alloc: BlockAllocator) -> None:
        self.layers = layers
        self.block_size = block_size
        self.alloc = alloc
        self.index = PrefixIndex(block_size)
        self.tables: dict[int, list[int]] = {}  # sequence id -> its table of this group, in position order
        self.nodes: dict[int, list[Node]] = {}  # sequence id -> the prefix node of each full block, in order

    # -- the rules of a kind -------------------------------------------------------------------

    @abstractmethod
    def visible_from(self, length: int) -> int:
        """The first position `gather` shows of a layer of `length` positions."""

    @abstractmethod
    def release(self, sid: int, lens: Sequence[int]) -> None:
        """At the end of an append (`lens`: the sequence's length of each of the cache's layers): let go of
        the table entries no layer of the group needs any more."""

    @abstractmethod
    def hit(self, tokens: Sequence[int], most: int) -> tuple[list[Node], int]:
        """The nodes of the longest hit of at most `most` blocks this group can serve, and how many of the first
        it skips (`PrefixIndex.hit`)."""

    # -- what every kind does alike ------------------------------------------------------------

    def shortest(self, lens: Sequence[int]) -> int:
        """The length of the group's shortest layer: every layer of the group holds its positions."""
        return min(lens[i] for i in self.layers)

    def add(self, sid: int, run: Sequence[Node] = (), skipped: int = 0) -> None:
        """A new sequence's table: `skipped` RELEASED entries, then the blocks of the rest of `run` (a hit,
        `hit`), each gaining a holder."""
        table = [RELEASED] * skipped
        for node in run[skipped:]:
            assert node.block is not None  # the blocks a hit takes are registered
            self.alloc.acquire(node.block)
            table.append(node.block)
        self.tables[sid] = table
        self.nodes[sid] = list(run)

    def fork(self, parent: int, child: int) -> None:
        """The child's table is a copy of the parent's; each block in it gains a holder."""
        table = self.tables[parent]
        for block in table:
            if block != RELEASED:
                self.alloc.incref(block)
        self.tables[child] = table.copy()
        self.nodes[child] = self.nodes[parent].copy()

    def free(self, sid: int) -> None:
        """Drop the sequence's table, letting go of it from its last entry to its first."""
        table = self.tables.pop(sid)
        del self.nodes[sid]
        self._let_go(reversed(table))

    def register(self, sid: int, tokens: Sequence[int], lens: Sequence[int]) -> None:
        """Prefix caching: register the blocks every layer of the group has filled since the last registration
        (from len(nodes) to the shortest layer's full blocks) under their keys, the whole prefix of token ids
        (`tokens`, the sequence's declared ones), unless a key already names a block."""
        bs, index, nodes, table = self.block_size, self.index, self.nodes[sid], self.tables[sid]
        for i in range(len(nodes), self.shortest(lens) // bs):
            parent = nodes[i - 1] if i else index.root
            if parent.dead:  # pruned since (its key was evicted): the path is made again
                nodes[:] = index.path(tokens, i)
                parent = nodes[i - 1]
            node = index.child(parent, tokens[i * bs : (i + 1) * bs])
            nodes.append(node)
            index.register(node, table[i])

    def _release_first(self, table: list[int], cut: int) -> None:
        """Make entries 0 .. cut-1 of `table` RELEASED, letting go of their blocks highest first. The entries
        released before are the first ones, so the walk stops at the first RELEASED it meets."""
        newly = []
        for i in range(cut - 1, -1, -1):
            if table[i] == RELEASED:
                break
            newly.append(table[i])
            table[i] = RELEASED
        self._let_go(newly)

    def _let_go(self, blocks: Iterable[int]) -> None:
        """Let go of these table entries, in this order (RELEASED ones skipped): each block whose last holder
        this was returns to the pool, or, registered (a block is only ever registered in the index of the
        group whose tables hold it), becomes cached."""
        for block in blocks:
            if block != RELEASED:
                self.alloc.decref(block, self.index.is_registered(block))


class FullAttention(Group):
    """Full-attention layers: a token attends to every position before it."""

    def visible_from(self, length: int) -> int:
        """Every position."""
        return 0

    def release(self, sid: int, lens: Sequence[int]) -> None:
        """Nothing, ever: every position stays needed."""

    def hit(self, tokens: Sequence[int], most: int) -> tuple[list[Node], int]:
        """The run of registered keys from the first block: every block of a hit is read."""
        return self.index.hit(tokens, None, most)


class SlidingWindow(Group):
    """Layers whose token at position p attends to positions p-W+1 .. p (`window` W)."""

    def __init__(self, layers: tuple[int, ...], block_size: int, alloc: BlockAllocator, window: int) -> None:
        super().__init__(layers, block_size, alloc)
        self.window = window
        self.need = -(-(window - 1) // block_size)  # the blocks the window of a hit's next token reaches

    def visible_from(self, length: int) -> int:
        """The window: the W - 1 positions before the next one."""
        return max(0, length - self.window + 1)

    def released_before(self, shortest: int) -> int:
        """Entries i with (i+1)*B <= shortest - W + 1: every position before every layer's window."""
        return max(0, shortest - self.window + 1) // self.block_size

    def release(self, sid: int, lens: Sequence[int]) -> None:
        """The blocks whose positions are all before every window of the group's layers."""
        table = self.tables[sid]
        self._release_first(table, self.released_before(self.shortest(lens)))

    def hit(self, tokens: Sequence[int], most: int) -> tuple[list[Node], int]:
        """The longest prefix whose last `need` keys are registered, the blocks before them skipped."""
        return self.index.hit(tokens, self.need, most)


def make_groups(windows: Sequence[int | None], block_size: int, alloc: BlockAllocator) -> list[Group]:
    """One group for each distinct window in `windows` (one entry a layer, None for full attention), in the
    order of their first layers, each of the kind its window names."""
    groups: list[Group] = []
    for window in dict.fromkeys(windows):
        layers = tuple(i for i, w in enumerate(windows) if w == window)
        group = FullAttention(layers, block_size, alloc) if window is None else SlidingWindow(layers, block_size, alloc, window)
        groups.append(group)
    return groups
