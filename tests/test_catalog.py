"""The seed's ten catalog tests (section 4), by name, against the implementation under test."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest

from assertions import assert_equal, assert_same_bits
import harness
from harness import assert_matches_model, same_bits, snapshot
from oracle import ContiguousKVCache, ToyDecoder
from paged_gate.random_ops import RandomOps
from strategies import seed_token

pytestmark = pytest.mark.catalog


def test_hand_example_block_table(impl: ModuleType) -> None:
    """Section 3: B = 2, one layer, one head, D = 2, a pool of 4; five tokens one at a time."""
    cache = impl.PagedKVCache(4, 2, 1, 1, 2)
    cache.add_seq(0)
    # (length, table, (free, used)) after each token, as the seed's table gives them.
    seed_table = [
        (1, [0], (3, 1)),
        (2, [0], (3, 1)),
        (3, [0, 1], (2, 2)),
        (4, [0, 1], (2, 2)),
        (5, [0, 1, 2], (1, 3)),
    ]
    for t, (length, table, (free, used)) in enumerate(seed_table):
        cache.append(0, 0, *seed_token(t))
        assert_equal('seq_len(0)', cache.seq_len(0), length, 'seq_len(0)')
        assert_equal('block_table(0)', cache.block_table(0).tolist(), table, f"after token {t}")
        stats = cache.stats()
        assert_equal('(stats["free"], stats["used"])', (stats["free"], stats["used"]), (free, used), f"after token {t}: {stats}")
        assert_equal('num_free_blocks()', cache.num_free_blocks(), free, 'num_free_blocks()')
        k, v = cache.gather(0, 0)
        assert k.shape == v.shape == (1, length, 2)
    k, v = cache.gather(0, 0)
    assert_equal('k[0, :, 0]', k[0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5], 'k[0, :, 0]')
    assert_equal('k[0, :, 1]', k[0, :, 1].tolist(), [0.0, -1.0, -2.0, -3.0, -4.0], 'k[0, :, 1]')
    assert_same_bits('v', v, -k, 'v')

    # A fork shares b0, b1, b2; the child's sixth token goes into b2 slot 1, so b2 is copied.
    cache.fork(0, 1)
    assert_equal('stats()["used"]', cache.stats()["used"], 3, 'stats()["used"]')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 2], 'block_table(1)')
    cache.append(1, 0, *seed_token(5))
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 3], 'block_table(1)')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_equal('gather(0, 0)[0][0, :, 0]', cache.gather(0, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5], 'gather(0, 0)[0][0, :, 0]')
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], 'gather(1, 0)[0][0, :, 0]')


def test_gather_preserves_head_token_dimension_order(impl: ModuleType) -> None:
    """gather returns [heads, tokens, dimensions]: value h*100 + t*10 + d comes back at [h, t, d]."""
    heads, dims, tokens = 3, 4, 9
    h, t, d = np.meshgrid(np.arange(heads), np.arange(tokens), np.arange(dims), indexing="ij")
    k = (h * 100 + t * 10 + d).astype(np.float32)  # exact in float16
    v = -k - 1
    cache = impl.PagedKVCache(8, 2, 1, heads, dims)
    cache.add_seq(7)
    for lo, hi in [(0, 1), (1, 4), (4, 9)]:  # chunks that start mid-block and cross blocks
        cache.append(7, 0, k[:, lo:hi], v[:, lo:hi])
    got_k, got_v = cache.gather(7, 0)
    assert_equal('got_k.shape', got_k.shape, (heads, tokens, dims), 'got_k.shape')
    assert got_k.dtype == np.float16 and got_k.flags.c_contiguous
    assert_same_bits('got_k', got_k, k.astype(np.float16), 'got_k')
    assert_same_bits('got_v', got_v, v.astype(np.float16), 'got_v')


def test_gather_matches_contiguous_float16(impl: ModuleType) -> None:
    """Chunks of 1 to 7 tokens, 3 layers, 2 interleaved sequences: the same as a contiguous float16 cache."""
    rng = np.random.default_rng(3)
    heads, dims, layers = 2, 5, 3
    paged = impl.PagedKVCache(64, 4, layers, heads, dims)
    contiguous = ContiguousKVCache(256, layers, heads, dims)
    for s in (10, 20):
        paged.add_seq(s)
        contiguous.add_seq(s)
    for step in range(24):
        s = (10, 20)[step % 2]
        n = int(rng.integers(1, 8))
        for layer in range(layers):
            k = rng.standard_normal((heads, n, dims)).astype(np.float32) * 3
            v = rng.standard_normal((heads, n, dims)).astype(np.float32) * 3
            paged.append(s, layer, k, v)
            contiguous.append(s, layer, k, v)
        for s2 in (10, 20):
            for layer in range(layers):
                got, want = paged.gather(s2, layer), contiguous.gather(s2, layer)
                assert_same_bits('got[0]', got[0], want[0], f"K of seq {s2} layer {layer} after step {step}")
                assert_same_bits('got[1]', got[1], want[1], f"V of seq {s2} layer {layer} after step {step}")


def test_layers_keep_independent_lengths(impl: ModuleType) -> None:
    """Each layer appends on its own, sharing one table sized for the longest layer."""
    rng = np.random.default_rng(4)
    cache = impl.PagedKVCache(16, 2, 3, 1, 2)
    model = harness.model(16, 2, 3, 1, 2)
    for c in (cache, model):
        c.add_seq(0)

    def append(layer: int, n: int) -> None:
        k, v = rng.standard_normal((2, 1, n, 2))
        cache.append(0, layer, k, v)
        model.append(0, layer, k, v)

    append(0, 5)
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 0, 0], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_equal('gather(0, 1)[0].shape', cache.gather(0, 1)[0].shape, (1, 0, 2), 'gather(0, 1)[0].shape')
    append(1, 2)  # inside blocks layer 0 already took: nothing new is allocated
    assert cache.block_table(0).tolist() == [0, 1, 2] and cache.stats()["used"] == 3
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 2, 0], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('gather(0, 2)[0].shape', cache.gather(0, 2)[0].shape, (1, 0, 2), "a layer with no positions gathers [H, 0, D]")
    append(2, 7)  # now layer 2 is the longest
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 2, 7], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2, 3], 'block_table(0)')
    assert cache.seq_len(0) == cache.seq_len(0, 0) == 5
    assert_matches_model(cache, model)


def _prompt(cache: Any, seq: int, n: int, layers: int = 1) -> None:
    for t in range(n):
        for layer in range(layers):
            k, v = seed_token(t + 10 * layer)
            cache.append(seq, layer, k, v)


def test_fork_shares_until_a_write(impl: ModuleType) -> None:
    """A fork allocates nothing; the first write into the shared partial block copies it alone."""
    cache = impl.PagedKVCache(8, 2, 2, 1, 2)
    cache.add_seq(0)
    _prompt(cache, 0, 5, layers=2)  # blocks 0, 1 full; block 2 partial
    before = snapshot(cache, [0], 2)
    cache.fork(0, 1)
    assert_equal('stats()', cache.stats(), before["stats"], "a fork allocates nothing")
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 2], 'block_table(1)')
    assert_equal('[seq_len(1, layer) for layer in range(2)]', [cache.seq_len(1, layer) for layer in range(2)], [5, 5], '[seq_len(1, layer) for layer in range(2)]')

    cache.append(1, 1, *seed_token(99))  # the child writes layer 1 into shared block 2
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 3], "only the partial block is copied")
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    assert_equal('snapshot(cache, [0], 2)', snapshot(cache, [0], 2), {**before, "stats": cache.stats(), "free": cache.num_free_blocks()}, 'snapshot(cache, [0], 2)')
    # The copy holds every layer: the child's layer 0 still reads the prompt.
    assert_same_bits('gather(1, 0)[0]', cache.gather(1, 0)[0], cache.gather(0, 0)[0], 'gather(1, 0)[0]')
    assert_equal('gather(1, 1)[0][0, :, 0]', cache.gather(1, 1)[0][0, :, 0].tolist(), [10.5, 11.5, 12.5, 13.5, 14.5, 99.5], 'gather(1, 1)[0][0, :, 0]')

    cache.append(1, 0, *seed_token(98))  # block 3 is the child's own now: written in place
    assert cache.block_table(1).tolist() == [0, 1, 3] and cache.stats()["used"] == 4
    cache.append(0, 0, *seed_token(97))  # the parent's block 2 has one holder again: no copy
    assert cache.block_table(0).tolist() == [0, 1, 2] and cache.stats()["used"] == 4
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 98.5], 'gather(1, 0)[0][0, :, 0]')
    assert_equal('gather(0, 0)[0][0, :, 0]', cache.gather(0, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 97.5], 'gather(0, 0)[0][0, :, 0]')


def test_free_restores_the_pool(impl: ModuleType) -> None:
    """A forked block returns only when both holders free it; freeing all restores every block."""
    cache = impl.PagedKVCache(8, 2, 1, 1, 2)
    cache.add_seq(0)
    _prompt(cache, 0, 5)
    cache.fork(0, 1)
    cache.append(1, 0, *seed_token(5))  # copies block 2: the child holds 0, 1, 3
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    cache.free(0)
    assert_equal('stats()["used"]', cache.stats()["used"], 3, "blocks 0 and 1 are still the child's; block 2 was the parent's alone")
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], 'gather(1, 0)[0][0, :, 0]')
    cache.add_seq(2)
    _prompt(cache, 2, 3)
    assert_equal('block_table(2)', cache.block_table(2).tolist(), [2, 4], "the freed block 2 is the lowest free again")
    cache.free(1)
    cache.free(2)
    assert_equal('stats()', cache.stats(), {"free": 8, "used": 0, "cached": 0, "evictions": 0}, 'stats()')
    assert_equal('num_free_blocks()', cache.num_free_blocks(), 8, 'num_free_blocks()')
    cache.add_seq(0)  # a freed id may be added again, empty
    assert cache.seq_len(0) == 0 and cache.block_table(0).tolist() == []


def test_out_of_blocks_changes_nothing(impl: ModuleType) -> None:
    """A multi-block append that cannot be satisfied leaves lengths, values and counts as they were."""
    assert issubclass(impl.OutOfBlocks, RuntimeError)
    cache = impl.PagedKVCache(5, 2, 2, 1, 2)
    cache.add_seq(0)
    _prompt(cache, 0, 3, layers=2)  # blocks 0, 1
    cache.fork(0, 1)
    before = snapshot(cache, [0, 1], 2)
    big = np.ones((1, 6, 2))  # positions 3..8: a copy of block 1 plus indices 2, 3, 4 = 4 > 3 free
    with pytest.raises(impl.OutOfBlocks):
        cache.append(1, 0, big, big)
    assert_equal('snapshot(cache, [0, 1], 2)', snapshot(cache, [0, 1], 2), before, 'snapshot(cache, [0, 1], 2)')
    with pytest.raises(impl.OutOfBlocks):
        cache.append(0, 1, big, big)
    assert_equal('snapshot(cache, [0, 1], 2)', snapshot(cache, [0, 1], 2), before, 'snapshot(cache, [0, 1], 2)')
    # Exactly enough succeeds: positions 3..6 need a copy of block 1 plus indices 2, 3 = 3 blocks.
    cache.append(1, 0, big[:, :4], big[:, :4])
    assert_equal('num_free_blocks()', cache.num_free_blocks(), 0, 'num_free_blocks()')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 2, 3, 4], 'block_table(1)')


ok = np.zeros((2, 1, 3), dtype=np.float32)  # a well-formed one-token chunk for test_bad_arguments' cache
BAD_CALLS: list[Any] = [
    # KeyError: ids that are not live
    ("append to unknown id", KeyError, lambda c: c.append(99, 0, ok, ok)),
    ("append to freed id", KeyError, lambda c: c.append(3, 0, ok, ok)),
    ("gather unknown id", KeyError, lambda c: c.gather(99, 0)),
    ("seq_len of freed id", KeyError, lambda c: c.seq_len(3)),
    ("block_table of unknown id", KeyError, lambda c: c.block_table(99)),
    ("free unknown id", KeyError, lambda c: c.free(99)),
    ("free freed id", KeyError, lambda c: c.free(3)),
    ("fork from unknown parent", KeyError, lambda c: c.fork(99, 5)),
    ("fork from freed parent", KeyError, lambda c: c.fork(3, 5)),
    # ValueError: reused ids, layers, shapes, empty chunks
    ("add_seq of a live id", ValueError, lambda c: c.add_seq(0)),
    ("fork onto a live child", ValueError, lambda c: c.fork(0, 1)),
    ("fork onto itself", ValueError, lambda c: c.fork(0, 0)),
    ("append to layer L", ValueError, lambda c: c.append(0, 2, ok, ok)),
    ("append to layer -1", ValueError, lambda c: c.append(0, -1, ok, ok)),
    ("gather layer L", ValueError, lambda c: c.gather(0, 2)),
    ("gather layer -1", ValueError, lambda c: c.gather(0, -1)),
    ("seq_len layer L", ValueError, lambda c: c.seq_len(0, 2)),
    ("seq_len layer -1", ValueError, lambda c: c.seq_len(0, -1)),
    ("k is 2-D", ValueError, lambda c: c.append(0, 0, ok[0], ok)),
    ("k and v are 2-D", ValueError, lambda c: c.append(0, 0, ok[0], ok[0])),
    ("k is 4-D", ValueError, lambda c: c.append(0, 0, ok[None], ok[None])),
    ("k.shape != v.shape", ValueError, lambda c: c.append(0, 0, ok, np.zeros((2, 2, 3)))),
    ("wrong number of heads", ValueError, lambda c: c.append(0, 0, np.zeros((1, 1, 3)), np.zeros((1, 1, 3)))),
    ("wrong head dimension", ValueError, lambda c: c.append(0, 0, np.zeros((2, 1, 4)), np.zeros((2, 1, 4)))),
    ("empty chunk T = 0", ValueError, lambda c: c.append(0, 0, np.zeros((2, 0, 3)), np.zeros((2, 0, 3)))),
    # TypeError: non-integers (bool included) and non-real dtypes
    pytest.param("float seq id", TypeError, lambda c: c.append(0.0, 0, ok, ok), marks=pytest.mark.python_surface),
    pytest.param("str seq id", TypeError, lambda c: c.gather("0", 0), marks=pytest.mark.python_surface),
    pytest.param("bool seq id", TypeError, lambda c: c.seq_len(True), marks=pytest.mark.python_surface),
    pytest.param("None seq id for add_seq", TypeError, lambda c: c.add_seq(None), marks=pytest.mark.python_surface),
    pytest.param("float child id", TypeError, lambda c: c.fork(0, 5.0), marks=pytest.mark.python_surface),
    pytest.param("bool child id", TypeError, lambda c: c.fork(0, False), marks=pytest.mark.python_surface),
    pytest.param("float layer", TypeError, lambda c: c.append(0, 0.0, ok, ok), marks=pytest.mark.python_surface),
    pytest.param("bool layer", TypeError, lambda c: c.gather(0, False), marks=pytest.mark.python_surface),
    pytest.param("str layer", TypeError, lambda c: c.seq_len(0, "0"), marks=pytest.mark.python_surface),
    pytest.param("bool k", TypeError, lambda c: c.append(0, 0, ok.astype(bool), ok), marks=pytest.mark.python_surface),
    pytest.param("bool v", TypeError, lambda c: c.append(0, 0, ok, ok.astype(bool)), marks=pytest.mark.python_surface),
    pytest.param("complex k", TypeError, lambda c: c.append(0, 0, ok.astype(np.complex64), ok), marks=pytest.mark.python_surface),
    pytest.param("object v", TypeError, lambda c: c.append(0, 0, ok, ok.astype(object)), marks=pytest.mark.python_surface),
    pytest.param("string k", TypeError, lambda c: c.append(0, 0, ok.astype(str), ok), marks=pytest.mark.python_surface),
]


@pytest.mark.parametrize("case, error, call", BAD_CALLS, ids=[getattr(c, "values", c)[0] for c in BAD_CALLS])
def test_bad_arguments(
    impl: ModuleType, case: str, error: type[BaseException], call: Callable[[Any], object]
) -> None:
    """Every row of the contract's error table raises its pinned type and changes nothing."""
    cache = impl.PagedKVCache(6, 2, 2, 2, 3)
    for s in (0, 3):
        cache.add_seq(s)
    ok = np.ones((2, 3, 3), dtype=np.float32)
    cache.append(0, 0, ok, ok)
    cache.fork(0, 1)
    cache.free(3)
    before = snapshot(cache, [0, 1], 2)
    with pytest.raises(error):
        call(cache)
    assert_equal('snapshot(cache, [0, 1], 2)', snapshot(cache, [0, 1], 2), before, f"{case} changed the cache")


@pytest.mark.parametrize(
    "sizes, error",
    [
        ((0, 2, 1, 1, 1), ValueError),
        ((4, 0, 1, 1, 1), ValueError),
        ((4, 2, 0, 1, 1), ValueError),
        ((4, 2, 1, 0, 1), ValueError),
        ((4, 2, 1, 1, 0), ValueError),
        ((-1, 2, 1, 1, 1), ValueError),
        pytest.param((4.0, 2, 1, 1, 1), TypeError, marks=pytest.mark.python_surface),
        pytest.param((4, True, 1, 1, 1), TypeError, marks=pytest.mark.python_surface),
        pytest.param((4, 2, "1", 1, 1), TypeError, marks=pytest.mark.python_surface),
        pytest.param((4, 2, 1, None, 1), TypeError, marks=pytest.mark.python_surface),
        pytest.param((4, 2, 1, 1, 1.5), TypeError, marks=pytest.mark.python_surface),
    ],
)
def test_bad_arguments_constructor(impl: ModuleType, sizes: tuple[Any, ...], error: type[BaseException]) -> None:
    """Sizes below 1 raise ValueError, non-integer sizes (bool included) TypeError."""
    with pytest.raises(error):
        impl.PagedKVCache(*sizes)


def _decode_both(caches: list[Any], decoder: ToyDecoder) -> None:
    """Prompt, then two forked branches, on every cache; logits within 1e-5 and the same greedy ids."""
    prompt = [3, 17, 5, 42, 8, 8, 1, 30, 12, 7, 9]
    outs = []
    for cache in caches:
        cache.add_seq(0)
        logits = decoder.forward(cache, 0, prompt)
        ids, steps = decoder.greedy(cache, 0, int(np.argmax(logits[-1])), 4)
        branches = []
        for child, first in ((1, ids[-1]), (2, (ids[-1] + 1) % 64)):
            cache.fork(0, child)
            branches.append(decoder.greedy(cache, child, first, 6))
        outs.append((logits, ids, steps, branches))
    (l0, ids0, steps0, br0), (l1, ids1, steps1, br1) = outs
    np.testing.assert_allclose(l0, l1, rtol=0, atol=1e-5)
    assert_equal('ids0', ids0, ids1, 'ids0')
    for a, b in zip(steps0, steps1):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    for (bi0, bs0), (bi1, bs1) in zip(br0, br1):
        assert_equal('bi0', bi0, bi1, f"greedy ids differ on a branch: {bi0} != {bi1}")
        for a, b in zip(bs0, bs1):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.floats
def test_paged_matches_contiguous_decoding(impl: ModuleType) -> None:
    """A two-layer toy decoder gives the same logits (1e-5) and greedy ids from paged and contiguous caches."""
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=1)
    paged = impl.PagedKVCache(64, 4, 2, 2, 8)
    contiguous = ContiguousKVCache(64, 2, 2, 8)
    _decode_both([paged, contiguous], decoder)
    # The branches really diverged, and each holds the prompt and its own tokens.
    assert paged.seq_len(1) == paged.seq_len(2) == 11 + 4 + 6
    assert not same_bits(paged.gather(1, 1)[0], paged.gather(2, 1)[0])
    assert_equal('block_table(1)[:3]', paged.block_table(1)[:3].tolist(), paged.block_table(0)[:3].tolist(), "full prompt blocks stay shared")


def test_random_ops_conserve_blocks(impl: ModuleType) -> None:
    """10^4 seeded add, fork, append and free operations against the oracle; counts after each; all back at the end."""
    n_blocks, bs, layers, heads, dims = 24, 3, 2, 1, 2
    cache = impl.PagedKVCache(n_blocks, bs, layers, heads, dims)
    model = harness.model(n_blocks, bs, layers, heads, dims)
    ops = RandomOps(np.random.default_rng(2026), layers=layers, block_size=bs, heads=heads, dims=dims, max_live=8, dtype="float64")
    refused = 0
    for step, (op, args) in enumerate(ops.calls(10_000)):
        try:
            outcome = getattr(model, op)(*args)
        except Exception as exc:  # only OutOfBlocks can happen here
            assert_equal('type(exc).__name__', type(exc).__name__, "OutOfBlocks", exc)
            refused += 1
            if not harness.sent_ahead(cache, op, args, exc):  # a driver: checked with the next requests
                with pytest.raises(impl.OutOfBlocks):
                    getattr(cache, op)(*args)
        else:
            if not harness.sent_ahead(cache, op, args, outcome):
                getattr(cache, op)(*args)
        harness.ask_ahead(cache, [("stats", ()), ("num_free_blocks", ())])
        stats = cache.stats()
        assert_equal('stats', stats, model.stats(), f"step {step} ({op}): {stats} != {model.stats()}")
        assert stats["free"] + stats["used"] == n_blocks and cache.num_free_blocks() == stats["free"]
        if step % 500 == 0:
            assert_matches_model(cache, model)
    assert_matches_model(cache, model)
    assert 0 < refused < 2_000, f"the run should hit OutOfBlocks now and then, not {refused} times"
    for s in ops.live:
        cache.free(s)
    assert_equal('stats()', cache.stats(), {"free": n_blocks, "used": 0, "cached": 0, "evictions": 0}, 'stats()')
