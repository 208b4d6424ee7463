"""The oracle's own tests, on hand-worked examples: it is trusted for its own reasons, not the cache's."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import ContiguousKVCache, ModelKVCache, OutOfBlocks, ToyDecoder
from tests.assertions import assert_equal
from tests.strategies import seed_token

pytestmark = pytest.mark.oracle


def test_model_follows_the_seed_worked_example() -> None:
    """Section 3 of the seed, row by row, then the fork and its copy on write."""
    model = ModelKVCache(4, 2, 1, 1, 2)
    model.add_seq(0)
    rows = [(1, [0], 3), (2, [0], 3), (3, [0, 1], 2), (4, [0, 1], 2), (5, [0, 1, 2], 1)]
    for t, (length, table, free) in enumerate(rows):
        model.append(0, 0, *seed_token(t, "float64"))
        assert (model.seq_len(0), model.block_table(0).tolist(), model.num_free_blocks()) == (length, table, free)
    assert model.gather(0, 0)[0][0, :, 0].tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]
    model.fork(0, 1)
    assert model.stats() == {"free": 1, "used": 3, "cached": 0, "evictions": 0}
    assert [model.holders(b) for b in range(4)] == [2, 2, 2, 0]
    model.append(1, 0, *seed_token(5, "float64"))
    assert model.block_table(1).tolist() == [0, 1, 3] and model.block_table(0).tolist() == [0, 1, 2]
    assert model.gather(0, 0)[0].shape == (1, 5, 2) and model.gather(1, 0)[0].shape == (1, 6, 2)
    with pytest.raises(OutOfBlocks):  # seq 0's block 2 is its own, but position 6 of seq 1 needs a new block
        model.append(1, 0, *seed_token(6, "float64"))
    assert issubclass(OutOfBlocks, RuntimeError)


def test_model_allocation_order_by_hand() -> None:
    model = ModelKVCache(6, 1, 1, 1, 1)
    one = np.ones((1, 1, 1))
    for s in range(3):
        model.add_seq(s)
        model.append(s, 0, one, one)  # seq s holds block s
    model.free(1)
    model.fork(0, 3)
    model.append(3, 0, np.ones((1, 2, 1)), np.ones((1, 2, 1)))  # index 1 → 1, index 2 → 3
    assert model.block_table(3).tolist() == [0, 1, 3]
    model.append(0, 0, one, one)  # position 1 of seq 0: a new block, the lowest free is 4
    assert model.block_table(0).tolist() == [0, 4]
    model.free(0)
    assert model.free_blocks() == [4, 5]
    model.append(3, 0, one, one)  # position 3: a new block, the lowest free
    assert model.block_table(3).tolist() == [0, 1, 3, 4]


def test_model_copy_on_write_takes_blocks_in_position_order() -> None:
    model = ModelKVCache(10, 2, 2, 1, 1)
    model.add_seq(0)
    model.append(0, 0, np.ones((1, 5, 1)), np.ones((1, 5, 1)))  # [0, 1, 2]
    model.fork(0, 1)
    model.append(1, 1, np.ones((1, 7, 1)), np.ones((1, 7, 1)))  # copies of 0, 1, 2 → 3, 4, 5; index 3 → 6
    assert model.block_table(1).tolist() == [3, 4, 5, 6]


def test_model_errors() -> None:
    model = ModelKVCache(2, 2, 1, 1, 1)
    model.add_seq(0)
    one = np.ones((1, 1, 1))
    with pytest.raises(KeyError):
        model.append(1, 0, one, one)
    with pytest.raises(ValueError):
        model.add_seq(0)
    with pytest.raises(ValueError):
        model.append(0, 1, one, one)
    with pytest.raises(ValueError):
        model.append(0, 0, np.ones((1, 0, 1)), np.ones((1, 0, 1)))
    with pytest.raises(TypeError):
        model.append(0, True, one, one)
    with pytest.raises(TypeError):
        model.append(0, 0, one.astype(complex), one)
    with pytest.raises(OutOfBlocks):
        model.append(0, 0, np.ones((1, 5, 1)), np.ones((1, 5, 1)))
    assert model.seq_len(0) == 0 and model.num_free_blocks() == 2
    with pytest.raises(ValueError):
        ModelKVCache(0, 1, 1, 1, 1)
    model.close()
    with pytest.raises(ValueError):
        model.stats()


def test_contiguous_cache_by_hand() -> None:
    cache = ContiguousKVCache(4, 2, 1, 2)
    cache.add_seq(0)
    for t in range(3):
        cache.append(0, 0, *seed_token(t, "float64"))
    k, v = cache.gather(0, 0)
    assert k.dtype == np.float16 and k[0, :, 0].tolist() == [0.5, 1.5, 2.5] and v[0, :, 1].tolist() == [0, 1, 2]
    assert cache.gather(0, 1)[0].shape == (1, 0, 2)
    cache.fork(0, 1)
    cache.append(1, 0, *seed_token(9, "float64"))
    assert cache.seq_len(0) == 3 and cache.seq_len(1) == 4, "a fork is a full, independent copy"
    assert cache.nbytes() == 2 * 2 * (2 * 1 * 4 * 2 * 2)  # two sequences, K and V, [L, H, max_len, D] float16
    with pytest.raises(ValueError):
        cache.append(1, 0, *seed_token(10, "float64"))  # past max_len
    k = np.array([[[1 + 2**-11, 70000.0]]])
    with np.errstate(over="ignore"):
        cache.append(0, 1, k, k)
    assert cache.gather(0, 1)[0].tolist() == [[[1.0, np.inf]]]


@pytest.mark.floats
def test_decoder_is_causal_and_deterministic() -> None:
    """Feeding a prompt at once, token by token or in uneven chunks gives the same logits, bit for bit (no row's
    value depends on how many rows share a call); the seed fixes the weights."""
    decoder = ToyDecoder(seed=5)
    prompt = [1, 2, 3, 4, 5, 6]
    whole, steps = ContiguousKVCache(16, 2, 2, 8), ContiguousKVCache(16, 2, 2, 8)
    whole.add_seq(0)
    steps.add_seq(0)
    all_at_once = decoder.forward(whole, 0, prompt)
    one_by_one = np.stack([decoder.forward(steps, 0, [t])[0] for t in prompt])
    assert all_at_once.shape == (6, 64) and all_at_once.dtype == np.float32
    assert_equal("logits", one_by_one, all_at_once, "forward token by token, against the whole prompt at once")
    chunked = ContiguousKVCache(16, 2, 2, 8)
    chunked.add_seq(0)
    in_chunks = np.concatenate([decoder.forward(chunked, 0, prompt[a:b]) for a, b in ((0, 2), (2, 5), (5, 6))])
    assert_equal("logits", in_chunks, all_at_once, "forward in chunks 2, 3, 1, against the whole prompt at once")
    assert np.isfinite(all_at_once).all()
    again = ContiguousKVCache(16, 2, 2, 8)
    again.add_seq(0)
    np.testing.assert_array_equal(ToyDecoder(seed=5).forward(again, 0, prompt), all_at_once)
    other = ContiguousKVCache(16, 2, 2, 8)
    other.add_seq(0)
    assert not np.allclose(ToyDecoder(seed=6).forward(other, 0, prompt), all_at_once)
    # The cache's float16 rounding matters: a float32 cache gives close but different logits. Rounding K
    # and V to float16 moves each by at most 2^-11 of itself; these logits are O(1) and the two layers'
    # attention averages values, so they move by about 1e-3, far inside 0.1 (which only says the two are
    # the same computation) and far outside 0 (which says the rounding is there).
    exact = ContiguousKVCache(16, 2, 2, 8, dtype=np.float32)
    exact.add_seq(0)
    f32 = decoder.forward(exact, 0, prompt)
    assert np.allclose(f32, all_at_once, atol=1e-1) and not np.array_equal(f32, all_at_once)


# -- prefix caching, by hand ---------------------------------------------------------------------


def prefill(model: ModelKVCache, seq: int, tokens: list[int], hits: int) -> None:
    """Append positions hits .. len(tokens)-1 of every layer, with values that name the token and layer."""
    for layer in range(model.n_layers):
        values = np.array([[[t + 100 * layer] for t in tokens[hits:]]], dtype=np.float64)
        model.append(seq, layer, values, -values)


def test_model_prefix_caching_hit_release_and_evict_by_hand() -> None:
    """B = 2, 2 layers, a pool of 4; prompts that share prefixes."""
    model = ModelKVCache(4, 2, 2, 1, 1, prefix_caching=True)
    prompt = [7, 8, 9, 10, 11]
    assert model.add_seq(0, prompt) == 0, "an empty cache serves nothing"
    prefill(model, 0, prompt, 0)  # blocks 0, 1 full (keys [7, 8], [7, 8, 9, 10]); block 2 partial
    assert model.block_table(0).tolist() == [0, 1, 2]
    assert model.stats() == {"free": 1, "used": 3, "cached": 0, "evictions": 0}
    # The same prompt: blocks 0 and 1 are served; the last token is always computed.
    assert model.add_seq(1, prompt) == 4
    assert model.block_table(1).tolist() == [0, 1] and [model.seq_len(1, layer) for layer in (0, 1)] == [4, 4]
    assert model.gather(1, 1)[0][0, :, 0].tolist() == [107, 108, 109, 110]
    # A prompt of exactly two blocks: only the first can be served (k * B <= len - 1).
    assert model.add_seq(2, [7, 8, 9, 10]) == 2
    # The same tokens after another prefix are another key.
    assert model.add_seq(3, [1, 7, 8, 9, 10]) == 0
    for s in (1, 2, 3):
        model.free(s)
    model.free(0)  # tail first: block 2 (no key) is free, then 1 and 0 become cached in that order
    assert model.stats() == {"free": 2, "used": 0, "cached": 2, "evictions": 0}
    assert model.cached == [1, 0]
    assert model.num_free_blocks() == 4
    # Three new blocks: the free 2 and 3, then the oldest cached (1) is evicted.
    model.add_seq(4, [1, 2, 3, 4, 5, 6])
    prefill(model, 4, [1, 2, 3, 4, 5, 6], 0)
    assert model.block_table(4).tolist() == [2, 3, 1]
    assert model.stats() == {"free": 0, "used": 3, "cached": 1, "evictions": 1}
    # [7, 8] is still cached (block 0), [7, 8, 9, 10] was evicted with block 1.
    assert model.add_seq(5, prompt) == 2 and model.block_table(5).tolist() == [0]
    assert model.cached == [] and model.stats()["cached"] == 0
    with pytest.raises(OutOfBlocks):  # positions 2..4 need two blocks; none is free or cached
        prefill(model, 5, prompt, 2)
    with pytest.raises(ValueError):  # past the declared tokens
        model.append(5, 0, np.ones((1, 4, 1)), np.ones((1, 4, 1)))


def test_model_prefix_caching_off_checks_and_does_nothing() -> None:
    model = ModelKVCache(4, 2, 1, 1, 1)
    assert model.add_seq(0, [1, 2, 3]) == 0
    model.extend(0, [4])
    model.append(0, 0, np.ones((1, 5, 1)), np.ones((1, 5, 1)))  # no declared-token limit when off
    with pytest.raises(ValueError):
        model.extend(0, [-1])
    with pytest.raises(TypeError):
        model.add_seq(1, [1.0])
    with pytest.raises(KeyError):
        model.extend(9, [1])
    model.free(0)
    assert model.stats() == {"free": 4, "used": 0, "cached": 0, "evictions": 0}
