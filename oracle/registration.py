"""Which full blocks a windowed cache registers: the profile option `registration` (CONTRACT.md, "Profiles").

`dense` registers every full block (this project; vLLM with `prefix_cache_retention_interval=None`).
`replay-tail` is vLLM's served default, retention 0, as vLLM's own words promise it: "retains only
semantic checkpoints, including the latest replay boundary and shared-prefix junctions". A windowed
hit at a block boundary E (in blocks) needs the need = ceil((W-1)/B) blocks before E, so the cache
keeps, of each sequence, only the blocks some reachable boundary needs. With p prompt tokens (those
given to add_seq; fork copies them) the boundaries are:

- the resend, (p-1)//B: a hit is capped at p - 1 tokens (vLLM's `replay_boundaries`);
- the extension, p//B: a longer prompt matches the last aligned block ("Two positions are reachable",
  the same docstring; they differ only when p is a multiple of B);
- the junction J: the most leading full blocks (at most (p-1)//B) the prompt shares with a prompt added
  before it, the state Marconi-style retention keeps ("guarantees that we still retain the system prompt",
  PR #52216);

and below each boundary E the run kept is need + 1 blocks, [E - need - 1, E), so that a prompt that
diverges inside the last block before E is served one block less, not 0 (#57610, PR #57613).
Blocks past the prompt (decode) are registered under no boundary. A block left out goes back to the
pool free, not cached, when its last holder lets go.

In a hybrid model (several groups) each window group keeps its own runs (its own need), and a
full-attention group registers every full block (vLLM: `reachable_block_mask` is None for it). The
junction is then what vLLM's `HybridKVCacheCoordinator` computes, and nothing is remembered for it:
the hit the first group looked up (a full-attention group if there is one) could serve alone, read
from the registered keys at add_seq (`ModelKVCache.first_groups_hit`), so it is bounded by the pool.
With one window group there is no other group to read it from, and the keys of every prompt's full
blocks are kept (`seen`): that rule is not bounded (engines/README.md says what vLLM keeps instead).
"""

from __future__ import annotations

import copy
import math
from typing import Hashable

Key = tuple[int, ...]


class Registration:
    """Under `replay-tail`: each sequence's boundaries, and (one window group) the keys of every prompt's full blocks."""

    def __init__(self, value: str, block_size: int, windows: list[int | None]) -> None:
        self.block_size = block_size
        # group -> the blocks a hit needs before its end (None: every full block registers, as under dense)
        self.needs = [None if value != "replay-tail" or w is None else math.ceil((w - 1) / block_size) for w in windows]
        self.sparse = any(n is not None for n in self.needs)
        self.seen: set[Key] = set()  # one window group: the key of each full block of each prompt added so far
        self.boundaries: dict[int, set[int]] = {}  # seq -> the boundaries E, in blocks, it keeps a run below

    def add(self, sid: int, ids: list[int], first_hit: int | None = None) -> None:
        """add_seq(sid, ids): its boundaries. A hybrid model passes `first_hit`, the junction; with one window
        group it is found among the keys seen, which this prompt's join."""
        if not self.sparse:
            return
        bs, p = self.block_size, len(ids)
        if first_hit is not None:
            junction = max(0, first_hit)
        else:
            junction = 0
            while junction < (p - 1) // bs and tuple(ids[: (junction + 1) * bs]) in self.seen:
                junction += 1
            self.seen.update(tuple(ids[: (i + 1) * bs]) for i in range(p // bs))
        self.boundaries[sid] = {(p - 1) // bs, p // bs, junction}

    def fork(self, parent: int, child: int) -> None:
        if parent in self.boundaries:  # added with prefix caching, under replay-tail
            self.boundaries[child] = set(self.boundaries[parent])

    def free(self, sid: int) -> None:
        self.boundaries.pop(sid, None)

    def keeps(self, sid: int, index: int, group: int = 0) -> bool:
        """Whether block `index` of the sequence's table in `group`, just full, is registered."""
        need = self.needs[group]
        if need is None:
            return True
        return any(end - need - 1 <= index < end for end in self.boundaries[sid])

    def copy(self) -> Registration:
        """An independent copy (the explorer's copies of the model: oracle.state)."""
        new = copy.copy(self)
        new.seen, new.boundaries = set(self.seen), {sid: set(ends) for sid, ends in self.boundaries.items()}
        return new

    def state(self) -> Hashable:
        """What the answers from now on depend on: each sequence's boundaries and the keys seen (empty when dense)."""
        return (tuple(sorted((sid, tuple(sorted(ends))) for sid, ends in self.boundaries.items())), tuple(sorted(self.seen)))
