"""Soak: over 10^5 seeded random operations at a realistic geometry, against the oracle in lockstep.

A serving loop in miniature: requests arrive (add_seq, a prompt appended layer by layer,
sometimes in pieces), some fork into parallel samples, every live sequence decodes one
token per layer per step, finished ones are freed, ids come back for reuse. When an
append runs out of blocks, the cache must raise OutOfBlocks with nothing changed, and
the loop preempts (frees) a sequence, as a scheduler would.

Cheap checks after every operation (stats, the free count, the touched sequence's table
and lengths against the model), the full comparison (every live table, length and
gather, bit for bit) every few thousand operations and at the end, and at the very end
every block back. A leak of one block per thousand requests shows as a stats mismatch at
the operation that leaks. Marked `slow`: left out of the default run (`pytest -m slow`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import harness
from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks
from strategies import make_chunk

pytestmark = pytest.mark.slow

NUM_BLOCKS, BLOCK_SIZE, N_LAYERS, N_HEADS, D_HEAD = 64, 16, 3, 2, 8
OPERATIONS = 300_000
FULL_CHECK_EVERY = 5_000


class Soak:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.cache = harness.impl().PagedKVCache(NUM_BLOCKS, BLOCK_SIZE, N_LAYERS, N_HEADS, D_HEAD)
        self.model = harness.model(NUM_BLOCKS, BLOCK_SIZE, N_LAYERS, N_HEADS, D_HEAD)
        self.ops = 0
        self.requests = 0
        self.out_of_blocks = 0
        self.forks = 0
        self.remaining: dict[int, int] = {}  # live sequence -> decode steps left
        self.spare_ids: list[int] = []
        self.next_id = 0
        self.last_full_check = 0

    # -- one operation, on both, with the cheap checks ---------------------------------------------

    def check_cheap(self, seq: int | None) -> None:
        stats = self.cache.stats()
        assert stats == self.model.stats(), f"after {self.ops} operations: stats {stats} != model {self.model.stats()}"
        assert stats["free"] + stats["used"] == NUM_BLOCKS
        assert self.cache.num_free_blocks() == stats["free"]
        if seq is not None and seq in self.model.tables:
            table = self.cache.block_table(seq)
            assert table.tolist() == self.model.tables[seq], f"after {self.ops} operations: table of {seq}"
            lens = [self.cache.seq_len(seq, layer) for layer in range(N_LAYERS)]
            assert lens == [self.model.seq_len(seq, layer) for layer in range(N_LAYERS)]
            assert len(table) == math.ceil(max(lens) / BLOCK_SIZE)

    def op(self, name: str, seq: int, *args: Any) -> bool:
        """One call on the model, then the cache; False if it ran out of blocks (and nothing changed)."""
        self.ops += 1
        try:
            getattr(self.model, name)(seq, *args)
        except ModelOutOfBlocks:
            before = (self.cache.stats(), self.cache.block_table(seq).tolist(), [self.cache.seq_len(seq, li) for li in range(N_LAYERS)])
            with pytest.raises(harness.impl().OutOfBlocks):
                getattr(self.cache, name)(seq, *args)
            after = (self.cache.stats(), self.cache.block_table(seq).tolist(), [self.cache.seq_len(seq, li) for li in range(N_LAYERS)])
            assert after == before, f"after {self.ops} operations: a failed append changed the cache"
            self.out_of_blocks += 1
            self.check_cheap(seq)
            return False
        getattr(self.cache, name)(seq, *args)
        self.check_cheap(seq)
        if self.ops - self.last_full_check >= FULL_CHECK_EVERY:
            harness.assert_matches_model(self.cache, self.model)
            self.last_full_check = self.ops
        return True

    # -- the serving loop ---------------------------------------------------------------------------

    def new_id(self) -> int:
        if self.spare_ids and self.rng.random() < 0.5:
            return self.spare_ids.pop(int(self.rng.integers(len(self.spare_ids))))
        self.next_id += 1
        return self.next_id

    def finish(self, seq: int) -> None:
        self.op("free", seq)
        del self.remaining[seq]
        self.spare_ids.append(seq)

    def preempt(self) -> None:
        """Out of blocks: free a live sequence chosen at random."""
        victims = sorted(self.remaining)
        self.finish(victims[int(self.rng.integers(len(victims)))])

    def admit(self) -> None:
        seq = self.new_id()
        self.op("add_seq", seq)
        self.requests += 1
        self.remaining[seq] = int(self.rng.integers(0, 25))
        prompt = int(self.rng.integers(1, 70))
        pieces = 1 if self.rng.random() < 0.7 else int(self.rng.integers(2, 5))  # chunked prefill
        bounds = sorted({0, prompt, *self.rng.integers(1, prompt + 1, size=pieces - 1).tolist()})
        for lo, hi in zip(bounds, bounds[1:]):
            for layer in range(N_LAYERS):
                if not self.op("append", seq, layer, *make_chunk(N_HEADS, hi - lo, D_HEAD, int(self.rng.integers(2**32)))):
                    self.preempt_until_gone(seq)
                    return
        if self.rng.random() < 0.2 and seq in self.remaining:
            for _ in range(int(self.rng.integers(1, 4))):
                child = self.new_id()
                self.op("fork", seq, child)
                self.forks += 1
                self.remaining[child] = int(self.rng.integers(0, 25))

    def preempt_until_gone(self, seq: int) -> None:
        """The request that ran out is dropped (its own partial prefill included)."""
        if seq in self.remaining:
            self.finish(seq)

    def decode_step(self) -> None:
        for seq in sorted(self.remaining):
            if seq not in self.remaining:
                continue  # preempted earlier in this step
            if self.remaining[seq] == 0:
                self.finish(seq)
                continue
            self.remaining[seq] -= 1
            for layer in range(N_LAYERS):
                if not self.op("append", seq, layer, *make_chunk(N_HEADS, 1, D_HEAD, int(self.rng.integers(2**32)))):
                    self.preempt()
                    break

    def run(self) -> None:
        while self.ops < OPERATIONS:
            arrivals = max(int(len(self.remaining) < 2), int(self.rng.poisson(1.5)))
            for _ in range(arrivals):
                self.admit()
            self.decode_step()
        harness.assert_matches_model(self.cache, self.model)
        for seq in sorted(self.remaining):
            self.finish(seq)
        stats = self.cache.stats()
        assert stats["free"] == NUM_BLOCKS and stats["used"] == 0, f"blocks did not all come back: {stats}"
        self.cache.close()


@pytest.mark.parametrize("seed", [0])
def test_soak_against_the_oracle(seed: int) -> None:
    soak = Soak(seed)
    soak.run()
    print(f"{soak.ops} operations, {soak.requests} requests, {soak.forks} forks, {soak.out_of_blocks} OutOfBlocks")
    assert soak.ops >= OPERATIONS
    assert soak.requests >= 1000, "too few requests for a leak of one block per thousand to show"
    assert soak.forks >= 100 and soak.out_of_blocks >= 10, "the run did not exercise forks and running out"
