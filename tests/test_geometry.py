"""The geometries real engines run, in the default run (issue 35): blocks of 16 and 32 positions,
SmolLM2's L = 30, H = 3, D = 64 and a serving engine's L = 4, H = 8, D = 128, windows of 4,096
positions that release blocks, with a fork, copy on write, prefix hits and OutOfBlocks at those
sizes; forks of 64-bit ids followed by a free, a write and gathers; and every float16 a cache must
keep (NaN payloads of both signs, infinities, subnormals, -0.0) at those sizes. Each call is made
on the oracle first and the cache must answer alike; every observable is compared after each step,
K and V bit for bit (`harness.assert_matches_model`).

The geometry vectors (vectorgen/geometry.py) replay sessions like these with few positions;
these write whole blocks of every layer and check every gather. The machines draw an engine's block
size, layers and heads one example in five (strategies.engine_geometries).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.harness import assert_matches_model
from tests.programs import both, refused, run
from tests.strategies import FLOAT16_SPECIALS, make_chunk

# name -> (B, L, H, D)
ENGINES = {
    "smollm2-b16-l30-h3-d64": (16, 30, 3, 64),
    "engine-b32-l4-h8-d128": (32, 4, 8, 128),
    "b16-l32-h8-d128": (16, 32, 8, 128),
}


def tricky(heads: int, tokens: int, dims: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """float16 K and V with the rounding traps and a quarter FLOAT16_SPECIALS (strategies.make_chunk, tricky)."""
    return make_chunk(heads, tokens, dims, seed, "float16", True)


@pytest.mark.parametrize("shape", list(ENGINES.values()), ids=list(ENGINES))
def test_fork_copy_on_write_and_out_of_blocks_at_an_engines_geometry(impl: ModuleType, shape: tuple[int, int, int, int]) -> None:
    """A prompt of B + 1 positions in every layer, a fork whose write copies the shared partial block (every
    layer's data), the parent's write in place, a grandchild whose copy on write finds the pool empty
    (OutOfBlocks, nothing changes), then takes the block a free gives back."""
    b, layers, heads, dims = shape
    pair = both(impl, 6, b, layers, heads, dims)
    run(pair, "add_seq", 0)
    for layer in range(layers):
        run(pair, "append", 0, layer, *tricky(heads, b + 1, dims, layer))  # blocks 0 and 1
    assert_matches_model(*pair)
    run(pair, "fork", 0, 1)
    run(pair, "append", 1, layers - 1, *tricky(heads, 1, dims, 100))  # block 1 shared: copied, every layer
    assert_matches_model(*pair, when=", after the child's copy on write")
    run(pair, "append", 0, 0, *tricky(heads, b - 1, dims, 101))  # the parent alone on block 1 now: in place
    run(pair, "fork", 1, 2)
    for seq in (3, 4, 5):  # the pool's last three blocks
        run(pair, "add_seq", seq)
        run(pair, "append", seq, 0, *tricky(heads, 1, dims, 200 + seq))
    refused(pair, impl.OutOfBlocks, "append", 2, 0, *tricky(heads, 2, dims, 300))  # a copy of the child's block 2
    assert_matches_model(*pair, when=", after the refused copy on write")
    run(pair, "free", 5)
    run(pair, "append", 2, 0, *tricky(heads, 2, dims, 300))
    assert_matches_model(*pair, when=", after the copy on write a free made room for")
    pair[0].close()


@pytest.mark.needs("prefix_caching")
@pytest.mark.parametrize("shape", [ENGINES["smollm2-b16-l30-h3-d64"], ENGINES["engine-b32-l4-h8-d128"]], ids=["smollm2", "engine"])
def test_prefix_hits_at_an_engines_geometry(impl: ModuleType, shape: tuple[int, int, int, int]) -> None:
    """A prompt of 2B + 1 tokens, every layer written; the same prompt served 2B positions; a fork of the served
    sequence and both decoding (copy on write of the shared partial block); the first freed, its blocks cached,
    then evicted by a prompt that needs the whole pool."""
    b, layers, heads, dims = shape
    pair = both(impl, 6, b, layers, heads, dims, prefix_caching=True)
    prompt = [5 + i % 3 for i in range(2 * b + 1)]
    for seq in (0, 1):
        served = run(pair, "add_seq", seq, prompt)
        for layer in range(layers):
            run(pair, "append", seq, layer, *tricky(heads, len(prompt) - served, dims, 10 * seq + layer))
        assert_matches_model(*pair, when=f", after sequence {seq}'s prompt")
    run(pair, "fork", 1, 2)
    for seq in (2, 1):
        run(pair, "extend", seq, [seq])
        for layer in range(layers):
            run(pair, "append", seq, layer, *tricky(heads, 1, dims, 100 + 10 * seq + layer))
    assert_matches_model(*pair, when=", after the fork decoded")
    for seq in (0, 1, 2):
        run(pair, "free", seq)
    run(pair, "add_seq", 3, [9] * (6 * b + 1))
    refused(pair, impl.OutOfBlocks, "append", 3, 0, *tricky(heads, 6 * b + 1, dims, 400))  # 7 blocks, a pool of 6
    run(pair, "free", 3)
    run(pair, "add_seq", 4, [9] * (5 * b + 1))
    run(pair, "append", 4, 0, *tricky(heads, 5 * b + 1, dims, 401))  # every free and cached block: evictions
    assert_matches_model(*pair, when=", after the evictions")
    pair[0].close()


def decode(pair: tuple[Any, Any], seqs: list[int], layers: int, heads: int, dims: int, steps: int, seed: int) -> None:
    """`steps` decode steps of each sequence, every layer; tables, lengths and stats checked after each (no gathers)."""
    for step in range(steps):
        for seq in seqs:
            for layer in range(layers):
                run(pair, "append", seq, layer, *tricky(heads, 1, dims, seed + 100 * step + 10 * seq + layer))
        assert_matches_model(*pair, seqs=[], when=f", after decode step {step}")


@pytest.mark.needs("sliding_window")
@pytest.mark.parametrize("caching", [False, pytest.param(True, marks=pytest.mark.needs("prefix_caching"))], ids=["window", "window-prefix"])
def test_a_window_of_4096_positions_releases_blocks(impl: ModuleType, caching: bool) -> None:
    """B = 16, W = 4,096, four layers, H = 2, D = 64: a prompt of W - 1 positions, decode steps across the
    releases of blocks 0 and 1 (every table checked after each step, the windows at the edges), a fork whose
    write copies the shared tail, OutOfBlocks; with prefix caching, a second prompt served from the right."""
    b, w, layers, heads, dims = 16, 4096, 4, 2, 64
    pair = both(impl, 262, b, layers, heads, dims, sliding_window=w, prefix_caching=caching)
    tokens = [i % 3 for i in range(w + 2 * b + 1)]
    run(pair, "add_seq", 0, tokens[: w - 1])
    for layer in range(layers):
        run(pair, "append", 0, layer, *tricky(heads, w - 1, dims, layer))
    assert_matches_model(*pair)
    if caching:
        run(pair, "extend", 0, tokens[w - 1 :])
    decode(pair, [0], layers, heads, dims, b, 1000)  # block 0 released at the last step
    assert_matches_model(*pair, when=", once block 0 was released")
    run(pair, "fork", 0, 1)
    decode(pair, [1, 0], layers, heads, dims, b, 2000)  # the child's first write copies the shared tail block
    assert_matches_model(*pair, when=", once block 1 was released")
    if caching:
        run(pair, "add_seq", 2, tokens[: w + b + 1])  # served from the right: the last 256 keys registered
        assert_matches_model(*pair, when=", after the hit")
    free = pair[1].num_free_blocks()
    if caching:
        run(pair, "extend", 1, [0] * ((free + 1) * b))
    refused(pair, impl.OutOfBlocks, "append", 1, 0, *tricky(heads, (free + 1) * b, dims, 3000))
    assert_matches_model(*pair, seqs=[], when=", after the refused append")
    pair[0].close()


@pytest.mark.parametrize("parent, child", [(2**32 + 3, 2**63 - 1), (2**32, 0), (-(2**63), 2**32 + 1), (2**63 - 1, -(2**63))])
def test_a_fork_of_a_wide_id_then_free_write_and_gather(impl: ModuleType, parent: int, child: int) -> None:
    """fork(parent, child) with an id of 2^32 or more: the parent freed (its blocks stay the child's), a new
    sequence takes other blocks, the child writes in place and is gathered; the freed id is KeyError, and
    added again it forks from the child and copies on write."""
    b, layers, heads, dims = ENGINES["engine-b32-l4-h8-d128"]
    pair = both(impl, 6, b, layers, heads, dims)
    run(pair, "add_seq", parent)
    for layer in range(layers):
        run(pair, "append", parent, layer, *tricky(heads, b + 1, dims, layer))
    run(pair, "fork", parent, child)
    run(pair, "free", parent)
    assert_matches_model(*pair, when=f", after free({parent})")
    refused(pair, KeyError, "gather", parent, 0)
    run(pair, "add_seq", parent ^ 1)
    run(pair, "append", parent ^ 1, 0, *tricky(heads, b + 1, dims, 50))  # two free blocks, not the child's
    run(pair, "append", child, 0, *tricky(heads, 1, dims, 51))  # block 1 held by the child alone: in place
    assert_matches_model(*pair, when=f", after the child's write")
    run(pair, "fork", child, parent)
    run(pair, "append", parent, layers - 1, *tricky(heads, 1, dims, 52))  # shared: copied
    assert_matches_model(*pair, when=", after the copy on write of the id added again")
    pair[0].close()


def test_every_float16_special_is_kept_bit_for_bit_at_an_engines_geometry(impl: ModuleType) -> None:
    """Each FLOAT16_SPECIALS value (signalling and quiet NaNs with payloads of both signs, +-inf, subnormals,
    -0.0) in every head and dimension of a B = 16, H = 8, D = 128 cache, through a fork and a copy on write."""
    b, layers, heads, dims = 16, 4, 8, 128
    pair = both(impl, 4, b, layers, heads, dims)
    run(pair, "add_seq", 0)
    for layer in range(layers):
        bits = np.resize(np.roll(FLOAT16_SPECIALS, layer), (heads, 3, dims))
        run(pair, "append", 0, layer, bits.view(np.float16), (bits ^ 0x8000).view(np.float16))
    run(pair, "fork", 0, 1)
    run(pair, "append", 1, 0, *tricky(heads, 1, dims, 7))
    assert_matches_model(*pair, when=", after the child's copy on write")
    pair[0].close()
