"""The suite's one home for what tests are built from, in the manner of array-api-tests'
hypothesis_helpers: geometries, chunks of K and V (float16 traps included; built in
testkit/chunks.py, re-exported here), and the model-side arithmetic that sizes an append.
Tested themselves in test_strategies.py.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from hypothesis import strategies as st

from oracle import ModelKVCache
from testkit.chunks import FLOAT16_SPECIALS, INPUT_DTYPES, TRICKY, TRICKY_INTS, make_chunk, make_values, seed_token

# -- chunks ---------------------------------------------------------------------------------------

# The chunk builders live in testkit/chunks.py (the vector generator uses them from the base
# install, without hypothesis); re-exported here, the tests' one place to import them from.

__all__ = [
    "FLOAT16_SPECIALS", "INPUT_DTYPES", "TRICKY", "TRICKY_INTS", "Geometry", "blocks_needed", "engine_geometries", "geometries", "now_and_then",
    "make_chunk", "make_values", "model_blocks_needed", "seed_token", "tokens_needing",
]


# -- geometry -----------------------------------------------------------------------------------------


class Geometry(NamedTuple):
    """PagedKVCache's five sizes, in its argument order."""

    num_blocks: int
    block_size: int
    n_layers: int
    n_kv_heads: int
    d_head: int


def geometries(
    num_blocks: st.SearchStrategy[int] | None = None, block_sizes: st.SearchStrategy[int] | None = None
) -> st.SearchStrategy[Geometry]:
    """Small geometries: pools from 1 block (the edge) to 64, blocks of 1 to 5 positions (1 often),
    1 to 3 layers, 1 or 2 heads, 1 to 3 dims. `num_blocks` and `block_sizes` replace the pool-size
    and block-size strategies."""
    pools = st.one_of(st.integers(1, 3), st.integers(4, 16), st.integers(16, 64))
    return st.builds(
        Geometry,
        num_blocks=num_blocks if num_blocks is not None else pools,
        block_size=block_sizes if block_sizes is not None else st.one_of(st.just(1), st.integers(1, 5)),
        n_layers=st.integers(1, 3),
        n_kv_heads=st.integers(1, 2),
        d_head=st.integers(1, 3),
    )


# The block sizes, layers and heads real engines run (issue 35): blocks of 8, 16 or 32 positions, 4 or 5 layers
# and 3 to 8 heads, with D = 1 to 3: a bug at these sizes shows in one value, and the machines gather every
# layer of every touched sequence after every step, which SmolLM2's L = 30, D = 64 or an engine's H = 8, D = 128
# made three times slower (tests/test_geometry.py and the geometry vectors run those). Pools of 1 to 12 blocks,
# so that forks share blocks and appends run out.
ENGINE_SHAPES = st.tuples(st.sampled_from((8, 16, 32)), st.integers(4, 5), st.integers(3, 8), st.integers(1, 3))


def engine_geometries(num_blocks: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[Geometry]:
    """An engine's block size, layers, heads and head size (ENGINE_SHAPES), with a pool of `num_blocks` (1 to 12)."""
    pools = num_blocks if num_blocks is not None else st.integers(1, 12)
    return st.builds(lambda n, shape: Geometry(n, *shape), pools, ENGINE_SHAPES)


def now_and_then(usual: st.SearchStrategy[Geometry], large: st.SearchStrategy[Geometry], every: int = 5) -> st.SearchStrategy[Geometry]:
    """`large` about one draw in `every`, `usual` otherwise (a failure shrinks towards `usual`)."""
    return st.integers(1, every).flatmap(lambda i: large if i == every else usual)


# -- sizing an append -----------------------------------------------------------------------------------


def blocks_needed(table: list[int], shared: Callable[[int], bool], start: int, tokens: int, block_size: int) -> int:
    """Blocks an append of `tokens` positions from `start` takes: a copy of each shared block it
    touches, plus a new block for each index past the end of the table (CONTRACT.md's rule)."""
    first, last = start // block_size, (start + tokens - 1) // block_size
    copies = sum(1 for i in range(first, min(last + 1, len(table))) if shared(table[i]))
    return copies + max(0, last + 1 - len(table))


def tokens_needing(needed: Callable[[int], int], blocks: int, limit: int, longest: bool) -> int | None:
    """The fewest (or most) tokens t <= limit with needed(t) == blocks; None if there is none.

    needed(t) grows with t by at most one block per block touched, so the scan stops once past.
    """
    found = None
    for t in range(1, limit + 1):
        n = needed(t)
        if n == blocks:
            found = t
            if not longest:
                return t
        elif n > blocks:
            break
    return found


def model_blocks_needed(model: ModelKVCache, seq: int, layer: int, tokens: int) -> int:
    """blocks_needed for a sequence of the oracle's model (the table of the layer's group): shared means more than
    one holder."""
    return blocks_needed(model.group_tables[model.group_of[layer]][seq], lambda b: model.holders(b) > 1, model.seq_len(seq, layer), tokens, model.block_size)
