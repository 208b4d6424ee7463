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

from typing import Any

import numpy as np
import pytest

from tests import harness
from tests.assertions import assert_equal, assert_raises, assert_served, assert_table
from oracle import OutOfBlocks as ModelOutOfBlocks
from tests.strategies import make_chunk

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
        when = f" after {self.ops} operations"
        assert_equal("stats()", self.cache.stats(), self.model.stats(), f"stats(){when}")
        assert_equal("num_free_blocks()", self.cache.num_free_blocks(), self.model.num_free_blocks(), f"num_free_blocks(){when}")
        if seq is not None and seq in self.model.tables:
            assert_table(f"block_table({seq})", self.cache.block_table(seq).tolist(), self.model.tables[seq], NUM_BLOCKS, f"block_table({seq}){when}")
            lens = [self.cache.seq_len(seq, layer) for layer in range(N_LAYERS)]
            assert_equal(f"[seq_len({seq}, layer) for every layer]", lens, [self.model.seq_len(seq, layer) for layer in range(N_LAYERS)], f"seq_len{when}")

    def op(self, name: str, seq: int, *args: Any) -> bool:
        """One call on the model, then the cache; False if it ran out of blocks (and nothing changed)."""
        self.ops += 1
        try:
            want = getattr(self.model, name)(seq, *args)
        except ModelOutOfBlocks:
            assert_raises(harness.impl().OutOfBlocks, f"{name}({seq}, ...) at operation {self.ops}", lambda: getattr(self.cache, name)(seq, *args))
            self.out_of_blocks += 1
            self.check_cheap(seq)  # the model, unchanged by its error: so the cache must be too
            return False
        got = getattr(self.cache, name)(seq, *args)
        if name == "add_seq":
            assert_served(got, want, f"add_seq({seq}) at operation {self.ops}")
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
        harness.assert_matches_model(self.cache, self.model, when=", every sequence freed")
        self.cache.close()


@pytest.mark.parametrize("seed", [0])
def test_soak_against_the_oracle(seed: int) -> None:
    soak = Soak(seed)
    soak.run()
    print(f"{soak.ops} operations, {soak.requests} requests, {soak.forks} forks, {soak.out_of_blocks} OutOfBlocks")
    done = {"operations": soak.ops >= OPERATIONS, "requests": soak.requests >= 1000, "forks": soak.forks >= 100, "OutOfBlocks": soak.out_of_blocks >= 10}
    assert_equal("what the run exercised enough of", done, {key: True for key in done}, "the soak's workload (a leak of a block per thousand requests must show)")
