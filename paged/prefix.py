"""Prefix caching's index: which block holds the K and V of each whole prefix of token ids.

A full block's key is the token ids of every position up to its end, the whole prefix
(CONTRACT.md, "Prefix caching"). The keys are kept as a tree of prefixes: a node is one
block's worth of tokens below the node of the prefix before it, so a lookup or a
registration costs one dict lookup of B tokens per block, whatever the cache holds, and
tokens are compared exactly (a dict compares its tuple keys; a hash never decides alone).

Invariants: a node is in its parent's `children` exactly while it has a block or a child
(`drop` prunes the rest and marks them `dead`), so every node on the path to a registered
node is in the tree; `_node_of[b]` is the node whose `block` is b, for every registered
block b, and no other.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Sequence


class Node:
    """One prefix: `tokens` (a block's worth) below `parent`, and the block registered under it, if any."""

    __slots__ = ("parent", "tokens", "children", "block", "dead")

    def __init__(self, parent: Node | None, tokens: tuple[int, ...]) -> None:
        self.parent = parent
        self.tokens = tokens
        self.children: dict[tuple[int, ...], Node] = {}
        self.block: int | None = None
        self.dead = False  # pruned from the tree; a sequence that remembers it makes its path again


class PrefixIndex:
    """Registered keys, as a tree of prefixes from `root` (the empty prefix)."""

    def __init__(self, block_size: int) -> None:
        self.block_size = block_size
        self.root = Node(None, ())
        self._node_of: dict[int, Node] = {}

    def is_registered(self, block: int) -> bool:
        return block in self._node_of

    def hit(self, tokens: Sequence[int], need: int | None, most: int) -> tuple[list[Node], int]:
        """The nodes of the prompt's served blocks, at most `most`, and how many of the first are skipped (not taken).

        The caller's `most` ends a hit before the last token (its logits are always computed). Full attention (`need` None):
        the longest run of registered keys tokens[:B], tokens[:2B], ... from the first block, none
        skipped. A sliding window whose served positions need the last `need` blocks (CONTRACT.md,
        "Sliding window"): the longest prefix whose last `need` keys are all registered, the blocks
        before them skipped; when there is none, the run from the first block, as without a window.
        """
        bs, node, path = self.block_size, self.root, list[Node]()
        while len(path) < most:  # the prompt's path in the tree, as far as it goes
            child = node.children.get(tuple(tokens[len(path) * bs : (len(path) + 1) * bs]))
            if child is None:
                break
            path.append(child)
            node = child
        if need is not None:
            contiguous = 0
            for i in range(len(path) - 1, -1, -1):  # from the right: the first `need` registered in a row
                contiguous = contiguous + 1 if path[i].block is not None else 0
                if contiguous == need:
                    return path[: i + need], i
        return list(takewhile(lambda n: n.block is not None, path)), 0  # the registered nodes from the first

    def child(self, parent: Node, tokens: Sequence[int]) -> Node:
        """The node of prefix `parent` + `tokens`, made if the tree has none yet."""
        key = tuple(tokens)
        node = parent.children.get(key)
        if node is None:
            node = parent.children[key] = Node(parent, key)
        return node

    def path(self, tokens: Sequence[int], blocks: int) -> list[Node]:
        """The nodes of prefixes tokens[:B] .. tokens[:blocks*B], made where missing."""
        nodes, node = [], self.root
        for i in range(blocks):
            node = self.child(node, tokens[i * self.block_size : (i + 1) * self.block_size])
            nodes.append(node)
        return nodes

    def register(self, node: Node, block: int) -> None:
        """Register `block` under the key `node` names, unless a block is registered there already
        (then `block` stays unregistered: a key names one block)."""
        if node.block is None:
            node.block = block
            self._node_of[block] = node

    def drop(self, block: int) -> None:
        """An evicted block's key goes; nodes left with no block and no child leave the tree."""
        node = self._node_of.pop(block)
        node.block = None
        parent = node.parent
        while parent is not None and node.block is None and not node.children:
            del parent.children[node.tokens]
            node.dead = True
            node, parent = parent, parent.parent
        if node.block is None and not node.children and node is not self.root:
            raise AssertionError(f"drop({block}) left a node with no block and no child in the tree")
