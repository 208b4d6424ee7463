"""The seed's ten catalog tests (section 4), by name, against the implementation under test."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable

import numpy as np
import pytest

from tests import harness
from tests.assertions import assert_equal, assert_raises, assert_same_bits, assert_served, same_bits
from tests.harness import assert_matches_model
from oracle import ContiguousKVCache, ToyDecoder
from testkit.random_ops import RandomOps
from tests.programs import InStep, both, refused, run
from tests.strategies import seed_token

pytestmark = pytest.mark.catalog


def test_hand_example_block_table(impl: ModuleType) -> None:
    """Section 3: B = 2, one layer, one head, D = 2, a pool of 4; five tokens one at a time."""
    cache, model = both(impl, 4, 2, 1, 1, 2)
    run((cache, model), "add_seq", 0)
    # (length, table, (free, used)) after each token, as the seed's table gives them.
    seed_table = [
        (1, [0], (3, 1)),
        (2, [0], (3, 1)),
        (3, [0, 1], (2, 2)),
        (4, [0, 1], (2, 2)),
        (5, [0, 1, 2], (1, 3)),
    ]
    for t, (length, table, (free, used)) in enumerate(seed_table):
        run((cache, model), "append", 0, 0, *seed_token(t))
        assert_equal('seq_len(0)', cache.seq_len(0), length, f"seq_len(0) after token {t}")
        assert_equal('block_table(0)', cache.block_table(0).tolist(), table, f"block_table(0) after token {t}")
        stats = cache.stats()
        assert_equal('(stats()["free"], stats()["used"])', (stats["free"], stats["used"]), (free, used), f"stats() after token {t}")
        assert_equal('num_free_blocks()', cache.num_free_blocks(), free, 'num_free_blocks()')
        assert_matches_model(cache, model, when=f" after token {t}")
    k, v = cache.gather(0, 0)
    assert_equal('k[0, :, 0]', k[0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5], 'k[0, :, 0]')
    assert_equal('k[0, :, 1]', k[0, :, 1].tolist(), [0.0, -1.0, -2.0, -3.0, -4.0], 'k[0, :, 1]')
    assert_same_bits('v', v, -k, 'v')

    # A fork shares b0, b1, b2; the child's sixth token goes into b2 slot 1, so b2 is copied.
    run((cache, model), "fork", 0, 1)
    assert_equal('stats()["used"]', cache.stats()["used"], 3, 'stats()["used"]')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 2], 'block_table(1)')
    run((cache, model), "append", 1, 0, *seed_token(5))
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 3], 'block_table(1)')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_equal('gather(0, 0)[0][0, :, 0]', cache.gather(0, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5], 'gather(0, 0)[0][0, :, 0]')
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], 'gather(1, 0)[0][0, :, 0]')
    assert_matches_model(cache, model)


def test_gather_preserves_head_token_dimension_order(impl: ModuleType) -> None:
    """gather returns [heads, tokens, dimensions]: value h*100 + t*10 + d comes back at [h, t, d]."""
    heads, dims, tokens = 3, 4, 9
    h, t, d = np.meshgrid(np.arange(heads), np.arange(tokens), np.arange(dims), indexing="ij")
    k = (h * 100 + t * 10 + d).astype(np.float32)  # exact in float16
    v = -k - 1
    cache, model = both(impl, 8, 2, 1, heads, dims)
    run((cache, model), "add_seq", 7)
    for lo, hi in [(0, 1), (1, 4), (4, 9)]:  # chunks that start mid-block and cross blocks
        run((cache, model), "append", 7, 0, k[:, lo:hi], v[:, lo:hi])
    got_k, got_v = cache.gather(7, 0)
    assert_equal('gather(7, 0) k is C-contiguous', got_k.flags.c_contiguous, True, 'gather(7, 0)')
    assert_same_bits('gather(7, 0) k', got_k, k.astype(np.float16), 'gather(7, 0): h*100 + t*10 + d at [h, t, d]')
    assert_same_bits('gather(7, 0) v', got_v, v.astype(np.float16), 'gather(7, 0): -(h*100 + t*10 + d) - 1 at [h, t, d]')


def test_gather_matches_contiguous_float16(impl: ModuleType) -> None:
    """Chunks of 1 to 7 tokens, 3 layers, 2 interleaved sequences: the same as a contiguous float16 cache."""
    rng = np.random.default_rng(3)
    heads, dims, layers = 2, 5, 3
    paged, model = both(impl, 64, 4, layers, heads, dims)
    contiguous = ContiguousKVCache(256, layers, heads, dims)
    for s in (10, 20):
        run((paged, model), "add_seq", s)
        contiguous.add_seq(s)
    for step in range(24):
        s = (10, 20)[step % 2]
        n = int(rng.integers(1, 8))
        for layer in range(layers):
            k = rng.standard_normal((heads, n, dims)).astype(np.float32) * 3
            v = rng.standard_normal((heads, n, dims)).astype(np.float32) * 3
            run((paged, model), "append", s, layer, k, v)
            contiguous.append(s, layer, k, v)
        for s2 in (10, 20):
            for layer in range(layers):
                for name, got, want in zip("kv", paged.gather(s2, layer), contiguous.gather(s2, layer)):
                    assert_same_bits(f"gather({s2}, {layer}) {name}", got, want, f"against the contiguous cache, after step {step}")
    assert_matches_model(paged, model)


def test_layers_keep_independent_lengths(impl: ModuleType) -> None:
    """Each layer appends on its own, sharing one table sized for the longest layer."""
    rng = np.random.default_rng(4)
    cache, model = both(impl, 16, 2, 3, 1, 2)
    run((cache, model), "add_seq", 0)

    def append(layer: int, n: int) -> None:
        k, v = rng.standard_normal((2, 1, n, 2))
        run((cache, model), "append", 0, layer, k, v)

    append(0, 5)
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 0, 0], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_equal('gather(0, 1)[0].shape', cache.gather(0, 1)[0].shape, (1, 0, 2), 'gather(0, 1)[0].shape')
    append(1, 2)  # inside blocks layer 0 already took: nothing new is allocated
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], "block_table(0) after layer 1's append inside them")
    assert_equal('stats()["used"]', cache.stats()["used"], 3, "stats() after layer 1's append inside them")
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 2, 0], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('gather(0, 2)[0].shape', cache.gather(0, 2)[0].shape, (1, 0, 2), "a layer with no positions gathers [H, 0, D]")
    append(2, 7)  # now layer 2 is the longest
    assert_equal('[seq_len(0, layer) for layer in range(3)]', [cache.seq_len(0, layer) for layer in range(3)], [5, 2, 7], '[seq_len(0, layer) for layer in range(3)]')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2, 3], 'block_table(0)')
    assert_equal('seq_len(0)', cache.seq_len(0), 5, "seq_len(0), layer 0's length")
    assert_matches_model(cache, model)


def _prompt(pair: tuple[Any, Any], seq: int, n: int, layers: int = 1) -> None:
    for t in range(n):
        for layer in range(layers):
            run(pair, "append", seq, layer, *seed_token(t + 10 * layer))


def test_fork_shares_until_a_write(impl: ModuleType) -> None:
    """A fork allocates nothing; the first write into the shared partial block copies it alone."""
    cache, model = pair = both(impl, 8, 2, 2, 1, 2)
    run(pair, "add_seq", 0)
    _prompt(pair, 0, 5, layers=2)  # blocks 0, 1 full; block 2 partial
    before = model.stats()
    run(pair, "fork", 0, 1)
    assert_equal('stats()', cache.stats(), before, "a fork allocates nothing")
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 2], 'block_table(1)')
    assert_equal('[seq_len(1, layer) for layer in range(2)]', [cache.seq_len(1, layer) for layer in range(2)], [5, 5], '[seq_len(1, layer) for layer in range(2)]')

    run(pair, "append", 1, 1, *seed_token(99))  # the child writes layer 1 into shared block 2
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 1, 3], "only the partial block is copied")
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    assert_matches_model(cache, model, [0], when=", the parent after the child's write")
    # The copy holds every layer: the child's layer 0 still reads the prompt.
    assert_same_bits('gather(1, 0)[0]', cache.gather(1, 0)[0], cache.gather(0, 0)[0], "the child's layer 0 against the parent's")
    assert_equal('gather(1, 1)[0][0, :, 0]', cache.gather(1, 1)[0][0, :, 0].tolist(), [10.5, 11.5, 12.5, 13.5, 14.5, 99.5], 'gather(1, 1)[0][0, :, 0]')

    run(pair, "append", 1, 0, *seed_token(98))  # block 3 is the child's own now: written in place
    assert_equal("(block_table(1), stats()['used'])", (cache.block_table(1).tolist(), cache.stats()["used"]), ([0, 1, 3], 4), "written in place")
    run(pair, "append", 0, 0, *seed_token(97))  # the parent's block 2 has one holder again: no copy
    assert_equal("(block_table(0), stats()['used'])", (cache.block_table(0).tolist(), cache.stats()["used"]), ([0, 1, 2], 4), "no copy of a block with one holder")
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 98.5], 'gather(1, 0)[0][0, :, 0]')
    assert_equal('gather(0, 0)[0][0, :, 0]', cache.gather(0, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 97.5], 'gather(0, 0)[0][0, :, 0]')
    assert_matches_model(cache, model)


def test_free_restores_the_pool(impl: ModuleType) -> None:
    """A forked block returns only when both holders free it; freeing all restores every block."""
    cache, model = pair = both(impl, 8, 2, 1, 1, 2)
    run(pair, "add_seq", 0)
    _prompt(pair, 0, 5)
    run(pair, "fork", 0, 1)
    run(pair, "append", 1, 0, *seed_token(5))  # copies block 2: the child holds 0, 1, 3
    assert_equal('stats()["used"]', cache.stats()["used"], 4, 'stats()["used"]')
    run(pair, "free", 0)
    assert_equal('stats()["used"]', cache.stats()["used"], 3, "blocks 0 and 1 are still the child's; block 2 was the parent's alone")
    assert_equal('gather(1, 0)[0][0, :, 0]', cache.gather(1, 0)[0][0, :, 0].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5, 5.5], 'gather(1, 0)[0][0, :, 0]')
    run(pair, "add_seq", 2)
    _prompt(pair, 2, 3)
    assert_equal('block_table(2)', cache.block_table(2).tolist(), [2, 4], "the freed block 2 is the lowest free again")
    run(pair, "free", 1)
    run(pair, "free", 2)
    assert_equal('stats()', cache.stats(), {"free": 8, "used": 0, "cached": 0, "evictions": 0}, 'stats()')
    assert_equal('num_free_blocks()', cache.num_free_blocks(), 8, 'num_free_blocks()')
    run(pair, "add_seq", 0)  # a freed id may be added again, empty
    assert_equal("(seq_len(0), block_table(0))", (cache.seq_len(0), cache.block_table(0).tolist()), (0, []), "a freed id added again")
    assert_matches_model(cache, model)


def test_out_of_blocks_changes_nothing(impl: ModuleType) -> None:
    """A multi-block append that cannot be satisfied leaves lengths, values and counts as they were."""
    assert_equal("issubclass(OutOfBlocks, RuntimeError)", issubclass(impl.OutOfBlocks, RuntimeError), True, "the module's OutOfBlocks")
    cache, model = pair = both(impl, 5, 2, 2, 1, 2)
    run(pair, "add_seq", 0)
    _prompt(pair, 0, 3, layers=2)  # blocks 0, 1
    run(pair, "fork", 0, 1)
    big = np.ones((1, 6, 2))  # positions 3..8: a copy of block 1 plus indices 2, 3, 4 = 4 > 3 free
    refused(pair, impl.OutOfBlocks, "append", 1, 0, big, big)
    assert_matches_model(cache, model, when=", after the refused append(1, 0)")  # the model, unchanged by its error
    refused(pair, impl.OutOfBlocks, "append", 0, 1, big, big)
    assert_matches_model(cache, model, when=", after the refused append(0, 1)")
    # Exactly enough succeeds: positions 3..6 need a copy of block 1 plus indices 2, 3 = 3 blocks.
    run(pair, "append", 1, 0, big[:, :4], big[:, :4])
    assert_equal('num_free_blocks()', cache.num_free_blocks(), 0, 'num_free_blocks()')
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [0, 2, 3, 4], 'block_table(1)')
    assert_matches_model(cache, model)


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
    cache, model = pair = both(impl, 6, 2, 2, 2, 3)
    for s in (0, 3):
        run(pair, "add_seq", s)
    ok = np.ones((2, 3, 3), dtype=np.float32)
    run(pair, "append", 0, 0, ok, ok)
    run(pair, "fork", 0, 1)
    run(pair, "free", 3)
    assert_raises(error, f"the model's {case}", lambda: call(model))
    assert_raises(error, case, lambda: call(cache))
    assert_matches_model(cache, model, when=f", after {case}")


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
    assert_raises(error, f"the model's PagedKVCache{sizes!r}", lambda: harness.model(*sizes))
    assert_raises(error, f"PagedKVCache{sizes!r}", lambda: impl.PagedKVCache(*sizes))


PROMPT = [3, 17, 5, 42, 8, 8, 1, 30, 12, 7, 9]


def _decode(cache: Any, decoder: ToyDecoder) -> tuple[Any, ...]:
    """Sequence 0 (added already): the prompt, then four greedy steps; then two forked branches of six steps.
    The prompt's logits, the greedy ids and each step's logits, of the trunk and of each branch."""
    logits = decoder.forward(cache, 0, PROMPT)
    ids, steps = decoder.greedy(cache, 0, int(np.argmax(logits[-1])), 4)
    branches = []
    for child, first in ((1, ids[-1]), (2, (ids[-1] + 1) % 64)):
        cache.fork(0, child)
        branches.append(decoder.greedy(cache, child, first, 6))
    return logits, ids, steps, branches


def _assert_same_decoding(got: tuple[Any, ...], want: tuple[Any, ...], what: str, kv: str | None) -> None:
    """Two `_decode` results are equal, bit for bit: the prompt's logits, the trunk's and each branch's ids and logits."""
    (l0, ids0, steps0, branches0), (l1, ids1, steps1, branches1) = got, want
    where = what + (f"; the first K or V value that differs: {kv}" if kv else "")
    assert_equal("the prompt's logits", l0, l1, where)
    assert_equal("greedy ids", ids0, ids1, where)
    for i, (a, b) in enumerate(zip(steps0, steps1)):
        assert_equal(f"logits of greedy step {i}", a, b, where)
    for child, ((bi0, bs0), (bi1, bs1)) in enumerate(zip(branches0, branches1), 1):
        assert_equal(f"greedy ids of branch {child}", bi0, bi1, where)
        for i, (a, b) in enumerate(zip(bs0, bs1)):
            assert_equal(f"logits of branch {child}'s step {i}", a, b, where)


@pytest.mark.floats
def test_paged_matches_contiguous_decoding(impl: ModuleType) -> None:
    """A two-layer toy decoder gives the same logits and greedy ids from paged and contiguous caches, bit for bit
    (the decoder is exact: no BLAS, sums in index order), so the seed's 1e-5 holds. Every call on the paged cache
    is made on the model too (`InStep`): a failure names the first K or V value the cache holds that differs."""
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=1)
    paged, model = both(impl, 64, 4, 2, 2, 8)
    contiguous = ContiguousKVCache(64, 2, 2, 8)
    run((paged, model), "add_seq", 0)
    contiguous.add_seq(0)
    got = _decode(InStep(paged, model), decoder)
    kv = harness.first_kv_difference(paged, model, [0, 1, 2])
    _assert_same_decoding(got, _decode(contiguous, decoder), "the toy decoder, paged against contiguous", kv)
    assert_matches_model(paged, model)
    # The branches really diverged, and each holds the prompt and its own tokens.
    assert_equal("(seq_len(1), seq_len(2))", (paged.seq_len(1), paged.seq_len(2)), (11 + 4 + 6, 11 + 4 + 6), "the prompt, 4 steps, 6 of the branch")
    assert_equal("the branches' layer 1 K differ", not same_bits(paged.gather(1, 1)[0], paged.gather(2, 1)[0]), True, "gather(1, 1), gather(2, 1)")
    assert_equal('block_table(1)[:3]', paged.block_table(1)[:3].tolist(), paged.block_table(0)[:3].tolist(), "full prompt blocks stay shared")


def test_random_ops_conserve_blocks(impl: ModuleType) -> None:
    """10^4 seeded add, fork, append and free operations against the oracle; counts after each; all back at the end."""
    n_blocks, bs, layers, heads, dims = 24, 3, 2, 1, 2
    cache = impl.PagedKVCache(n_blocks, bs, layers, heads, dims)
    model = harness.model(n_blocks, bs, layers, heads, dims)
    ops = RandomOps(np.random.default_rng(2026), layers=layers, block_size=bs, heads=heads, dims=dims, max_live=8, dtype="float64")
    ran_out = 0
    for step, (op, args) in enumerate(ops.calls(10_000)):
        written = f"{op}{args[:2]!r} at step {step}"
        try:
            outcome = getattr(model, op)(*args)
        except Exception as exc:  # only OutOfBlocks can happen here
            assert_equal(f"the model's error for {written}", type(exc).__name__, "OutOfBlocks", "the only error of this run")
            ran_out += 1
            if not harness.sent_ahead(cache, op, args, exc):  # a driver: checked with the next requests
                assert_raises(impl.OutOfBlocks, written, lambda: getattr(cache, op)(*args))
        else:
            if not harness.sent_ahead(cache, op, args, outcome):
                got = getattr(cache, op)(*args)
                if op == "add_seq":
                    assert_served(got, outcome, written)
        harness.ask_ahead(cache, [("stats", ()), ("num_free_blocks", ())])
        assert_equal("stats()", cache.stats(), model.stats(), f"stats() after {written}")
        assert_equal("num_free_blocks()", cache.num_free_blocks(), model.num_free_blocks(), f"num_free_blocks() after {written}")
        if step % 500 == 0:
            assert_matches_model(cache, model)
    assert_matches_model(cache, model)
    assert_equal("the run hit OutOfBlocks now and then, not often", 0 < ran_out < 2_000, True, f"the model ran out {ran_out} times in 10^4 steps")
    for s in ops.live:
        run((cache, model), "free", s)
    assert_matches_model(cache, model)


@pytest.mark.floats
@pytest.mark.needs("sliding_window")
def test_paged_matches_contiguous_decoding_with_a_sliding_window(impl: ModuleType) -> None:
    """The twin of the test above with sliding-window attention (W = 6, two blocks and a bit): the windowed toy
    decoder gives, bit for bit, the same logits and greedy ids from the paged cache with `sliding_window=6`
    (which lets blocks go as the window moves on), from the contiguous cache gathering the same window, and
    from the contiguous cache keeping and gathering everything (a masked position weighs exactly 0)."""
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=1, window=6)
    paged, model = both(impl, 64, 4, 2, 2, 8, sliding_window=6)
    windowed, full = ContiguousKVCache(64, 2, 2, 8, sliding_window=6), ContiguousKVCache(64, 2, 2, 8)
    run((paged, model), "add_seq", 0)
    windowed.add_seq(0)
    full.add_seq(0)
    got = _decode(InStep(paged, model), decoder)
    kv = harness.first_kv_difference(paged, model, [0, 1, 2])
    for name, other in (("contiguous, windowed", windowed), ("contiguous, everything kept", full)):
        _assert_same_decoding(got, _decode(other, decoder), f"the windowed toy decoder, paged against {name}", kv)
    assert_matches_model(paged, model)
    # The window moved on: the oracle's tables let blocks go, so the decoder read only what the window keeps.
    assert_equal("released entries in the oracle's table of 1", sum(b == -1 for b in model.tables[1]) > 0, True, "the scenario")


@pytest.mark.floats
@pytest.mark.needs("hybrid")
def test_paged_matches_contiguous_decoding_in_a_hybrid_model(impl: ModuleType) -> None:
    """The twin of the test above for a hybrid model (layer 0 full attention, layer 1 a window of W = 6): the toy
    decoder with those layers gives, bit for bit, the same logits and greedy ids from the paged cache with
    `layer_windows=(None, 6)` (whose window group lets blocks go while the full-attention group keeps them), from
    the contiguous cache gathering each layer's window, and from the contiguous cache gathering everything."""
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=1, layer_windows=(None, 6))
    paged, model = both(impl, 64, 4, 2, 2, 8, layer_windows=(None, 6))
    hybrid, full = ContiguousKVCache(64, 2, 2, 8, layer_windows=(None, 6)), ContiguousKVCache(64, 2, 2, 8)
    run((paged, model), "add_seq", 0)
    hybrid.add_seq(0)
    full.add_seq(0)
    got = _decode(InStep(paged, model), decoder)
    kv = harness.first_kv_difference(paged, model, [0, 1, 2])
    for name, other in (("contiguous, each layer's window", hybrid), ("contiguous, everything kept", full)):
        _assert_same_decoding(got, _decode(other, decoder), f"the hybrid toy decoder, paged against {name}", kv)
    assert_matches_model(paged, model)
    # The window group let blocks go and the full-attention group kept every block (the oracle's tables).
    tables = [model.group_tables[g][1] for g in (0, 1)]
    assert_equal("released entries (full, window) in the oracle's tables of 1", [-1 in t for t in tables], [False, True], "the scenario")
