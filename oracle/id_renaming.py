"""Block ids as names: a port's block tables checked against the oracle's up to a renaming.

Under `allocation=any` a port may take any free block, so its ids need not be the oracle's.
What must still hold: two entries hold the same block exactly when their ids are equal, a
held (or cached) block is never handed out again, and an entry keeps its id for as long as
its block stays in the table. So each oracle block is bound to the port's id when it enters
a table, and the binding lasts until the block goes back to the pool (its lifetime ends:
`ModelKVCache.lifetime`, or a transcript's `# released` line); one permutation for a whole
run would not hold, since ids are recycled.

Under every profile a port's ids are blocks of its pool, 0 .. N-1 (`outside_pool`; a port with a
reserved block reports its ids after the shift it documents, as the vLLM adapter does): a renaming
is of the pool's ids among themselves, never into ids the pool does not have. The one other value
a table may hold is RELEASED (-1), an entry a sliding window let go: it is no name, and it stands
exactly where the oracle's table has one.
"""

from __future__ import annotations

from typing import Sequence

from .model import RELEASED


def outside_pool(what: str, ids: Sequence[int], num_blocks: int) -> str | None:
    """None when every id is a block of a pool of `num_blocks`, 0 .. num_blocks-1; else the first that is
    not, in the suite's format (after `what`, a table's name)."""
    for i, block in enumerate(ids):
        if not 0 <= block < num_blocks and block != RELEASED:
            return f"{what}[{i}]={block}, but should be a block id of the pool, 0..{num_blocks - 1} (num_blocks={num_blocks})"
    return None


class BlockNames:
    """The bijection between the oracle's block ids and the port's (ids of a pool of `num_blocks`), for
    blocks whose lifetime goes on."""

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        self._port_of: dict[int, int] = {}  # oracle id -> port id
        self._oracle_of: dict[int, int] = {}  # port id -> oracle id
        self._where: dict[int, str] = {}  # oracle id -> where the binding was made, for messages

    def release(self, oracle_id: int) -> None:
        """The oracle's block went back to the pool: its name is free for the next block."""
        port = self._port_of.pop(oracle_id, None)
        if port is not None:
            del self._oracle_of[port]
            del self._where[oracle_id]

    def check(self, what: str, got: Sequence[int], want: Sequence[int]) -> str | None:
        """None when the port's table `got` is the oracle's `want` up to the renaming, binding new
        entries; else the first entry that breaks it, in the suite's format (after `what`). An id outside the
        pool breaks it first, whatever the oracle's table."""
        outside = outside_pool(what, got, self.num_blocks)
        if outside is not None:
            return outside
        if len(got) != len(want):
            return f"{what} has {len(got)} blocks, but should have {len(want)}: {list(got)} for the oracle's {list(want)}"
        for i, (port, oracle) in enumerate(zip(got, want)):
            if port == RELEASED or oracle == RELEASED:
                if port != oracle:
                    should = "-1, an entry the sliding window released" if oracle == RELEASED else "a block of the pool, not -1 (released)"
                    return f"{what}[{i}]={port}, but should be {should}"
                continue
            bound = self._port_of.get(oracle)
            if bound is not None:
                if bound != port:
                    return (
                        f"{what}[{i}]={port}, but should be {bound}: the id this block has had since {self._where[oracle]} "
                        f"(it is still in a table or cached, so it keeps its id; ids are names, but not for changing)"
                    )
                continue
            other = self._oracle_of.get(port)
            if other is not None:
                return (
                    f"{what}[{i}]={port}, but {port} is already the block of {self._where[other]}, which is still held or "
                    f"cached: this entry should be a block of its own (a block held is never handed out again)"
                )
            self._port_of[oracle], self._oracle_of[port] = port, oracle
            self._where[oracle] = f"{what}[{i}]"
        return None

    def copy(self) -> BlockNames:
        """An independent copy (the exhaustive explorer's paths branch)."""
        new = BlockNames(self.num_blocks)
        new._port_of, new._oracle_of, new._where = dict(self._port_of), dict(self._oracle_of), dict(self._where)
        return new

    def bound(self) -> dict[int, int]:
        """Every port id bound now, to its oracle id (a copy)."""
        return dict(self._oracle_of)

    def oracle_ids(self, got: Sequence[int]) -> list[int]:
        """The port's ids as the oracle's (after `check` bound them); RELEASED stays RELEASED."""
        return [p if p == RELEASED else self._oracle_of[p] for p in got]
