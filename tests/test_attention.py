"""The reference paged decode (paged/attention.py) against dense attention, on hand-built pages and through the
page tables of the implementation under test (CONTRACT.md, "Page tables for kernels").

Every expectation is dense float64 attention over what the oracle's `gather` shows (or, for hand-built
pages, over the positions the test put there) plus the new token, within `tolerance`, a bound derived
from float32 arithmetic that holds for any summation order (so for any BLAS kernel and thread count).
Each check runs decode a second time over a copy of the pool in which every slot no sequence of the batch
shows is NaN (every block no live table holds, free, released or cached, among them): the output must be the
same bits, finite.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np
import pytest

from oracle import ContiguousKVCache, ToyDecoder
from paged.attention import attend, decode, merge_state, write_slots
from tests import harness
from tests.assertions import assert_equal, assert_raises, message
from tests.programs import InStep, both, run

U = 2.0**-24  # the unit roundoff of float32


def dense(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """Attention of q `[Hq, D]` over k, v `[H, T, D]` in float64 (query head h reads KV head h // (Hq // H));
    zeros when T = 0, as decode answers a row with no position."""
    hq, d = q.shape
    if k.shape[1] == 0:
        return np.zeros((hq, d))
    kr, vr = (np.repeat(x.astype(np.float64), hq // k.shape[0], axis=0) for x in (k, v))
    scores = np.einsum("hd,htd->ht", q.astype(np.float64) * scale, kr)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    out: np.ndarray = np.einsum("ht,htd->hd", weights / weights.sum(axis=1, keepdims=True), vr)
    return out


def tolerance(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> float:
    """A bound on |decode - dense| for one row over its T keys k, v `[H, T, D]` (float16, exact in float32).

    u = 2^-24, g(m) = m u / (1 - m u). A float32 scaled score, summed in any order (any BLAS kernel), errs by at
    most e = g(D + 2) max_i sum_d |scale q_d k_id| (D products and sums, the scaling of q, the rounding of scale).
    A key's computed weight is exp(score - its page's max) times up to three exps of log-sum-exp differences
    (the page's state, the merge of the pages, the merge with the new token); relative to the exact weight it
    errs by eps <= 2e (its score and its page's max) + 3 * 8u (NumPy's float32 exp and log within 4 ULP, 8u)
    + 2 * 8u (two logs) + 8 S u (some 8 roundings of log-sum-exps of magnitude at most S = max |score| + log T)
    + 2 T u (the sums of weights). The output is the weights' convex combination of the v_i: weights off by a
    relative eps at most move it by 4 eps / (1 - eps) max|v|; the sums of products and the division add
    g(T + 2) max|v|. The bound doubled covers the terms of second order.
    """
    d, t = q.shape[-1], k.shape[1]
    if t == 0:
        return 0.0
    heads = np.repeat(k.astype(np.float64), q.shape[0] // k.shape[0], axis=0)
    products = np.abs(q.astype(np.float64) * scale)[:, None, :] * np.abs(heads)
    e = (d + 2) * U / (1 - (d + 2) * U) * float(products.sum(axis=-1).max())
    s = float(np.abs(np.einsum("htd,hd->ht", heads, q.astype(np.float64) * scale)).max()) + math.log(t)
    eps = 2 * e + (24 + 16 + 8 * s + 2 * t) * U
    vmax = float(np.abs(v.astype(np.float64)).max())
    return float(2 * vmax * (4 * eps / (1 - eps) + (t + 2) * U / (1 - (t + 2) * U)))


def assert_close(got: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, what: str, call: str) -> None:
    """One row of decode within `tolerance` of dense float64 attention over k, v."""
    __tracebackhide__ = True
    err = float(np.abs(got.astype(np.float64) - dense(q, k, v, scale)).max())
    bound = tolerance(q, k, v, scale)
    if not err <= bound:
        raise AssertionError(message(f"max |decode - dense attention| of {what}", f"{err:.3g}", f"at most {bound:.3g} (tolerance)", call))


def shown_slots(cache: Any, model: Any, seqs: Sequence[int], layer: int) -> np.ndarray:
    """The flat slots of the positions `gather` shows, of each sequence of the batch (the cache's own slot mapping)."""
    slots = [np.zeros(0, np.int64)]
    for s in seqs:
        n = model.seq_len(s, layer)
        a = n - model.gather(s, layer)[0].shape[1]
        slots.append(np.asarray(cache.slot_mapping(s, layer, a, n - a), np.int64))
    return np.concatenate(slots)


def poisoned(pages: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """A copy of HND pages `[G, H, P, D]` in which every slot but `keep` (flat, page * P + offset) is NaN."""
    g, h, p, d = pages.shape
    flat = np.ascontiguousarray(pages.transpose(0, 2, 1, 3)).reshape(g * p, h, d)
    out = np.full_like(flat, np.nan)
    out[keep] = flat[keep]
    return out.reshape(g, p, h, d).transpose(0, 2, 1, 3)


def check_decode(cache: Any, model: Any, seqs: Sequence[int], layer: int, window: int | None, k_new: np.ndarray, v_new: np.ndarray, rng: np.random.Generator, when: str) -> None:
    """decode over the cache's exports for every P dividing B and Hq = H, 2H, 4H, against dense float64 attention
    over the model's gather plus the new token; and over the poisoned pool, the same bits."""
    __tracebackhide__ = True
    keep = shown_slots(cache, model, seqs, layer)
    h, d = k_new.shape[1:]
    for page_size in [p for p in range(1, model.block_size + 1) if model.block_size % p == 0]:  # the oracle's sizes: a driver's cache has none
        tables = cache.page_table(list(seqs), layer, page_size)
        k_pages, v_pages = cache.kv_pages(layer, page_size)
        call = f"decode over page_table({list(seqs)}, {layer}, {page_size}), window={window}, {when}"
        for group in (1, 2, 4):
            q = rng.standard_normal((len(seqs), h * group, d)).astype(np.float32)
            got = decode(q, k_pages, v_pages, *tables, k_new=k_new, v_new=v_new, window=window)
            for i, s in enumerate(seqs):
                k, v = (np.concatenate([g, new[i][:, None]], axis=1) for g, new in zip(model.gather(s, layer), (k_new, v_new)))
                assert_close(got[i], q[i], k, v, 1 / math.sqrt(d), f"sequence {s}, Hq = {h * group}", call)
            again = decode(q, poisoned(k_pages, keep), poisoned(v_pages, keep), *tables, k_new=k_new, v_new=v_new, window=window)
            assert_equal("decode with every slot no sequence of the batch shows NaN is finite", bool(np.isfinite(again).all()), True, call)
            assert_equal("decode with every slot no sequence of the batch shows NaN", again, got, call)


def decode_step(pair: tuple[Any, Any], seqs: Sequence[int], windows: Sequence[int | None], rng: np.random.Generator, when: str) -> None:
    """One decode step of each sequence, layer by layer, in the contract's decode order: check decode over the
    exports and the new token (before the append), then append the token (declared first with prefix caching)."""
    cache, model = pair
    if model.prefix_caching:
        for s in seqs:
            run(pair, "extend", s, [int(rng.integers(0, 50))])
    for layer, window in enumerate(windows):
        k_new, v_new = (rng.standard_normal((len(seqs), model.n_kv_heads, model.d_head)).astype(np.float16) for _ in "kv")
        check_decode(cache, model, seqs, layer, window, k_new, v_new, rng, f"{when}, layer {layer}")
        for i, s in enumerate(seqs):
            run(pair, "append", s, layer, k_new[i][:, None], v_new[i][:, None])


def prompt(pair: tuple[Any, Any], seq: int, tokens: list[int], rng: np.random.Generator) -> int:
    """Add `seq` with this prompt and write the positions a prefix hit did not serve, every layer, in one chunk;
    return the positions served."""
    cache, model = pair
    served = run(pair, "add_seq", seq, tokens)
    for layer in range(model.n_layers):
        k, v = (rng.standard_normal((model.n_kv_heads, len(tokens) - served, model.d_head)).astype(np.float16) for _ in "kv")
        run(pair, "append", seq, layer, k, v)
    return int(served)


# -- hand-built pages: the kernel alone ------------------------------------------------------------------------


def hand_built(rng: np.random.Generator, lens: list[int], heads: int, page_size: int, d: int) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], list[np.ndarray]]:
    """A pool of random pages, twice the pages the sequences need, each sequence on pages drawn at random:
    (k_pages, v_pages, (indptr, indices, last_page_len), each sequence's pages)."""
    counts = [-(-n // page_size) for n in lens]
    pool = (rng.standard_normal((2, 2 * sum(counts) + 1, heads, page_size, d)) * 2).astype(np.float16)
    order = rng.permutation(pool.shape[1])
    ends = np.cumsum(counts)
    pages = [order[e - c : e] for c, e in zip(counts, ends)]
    indptr = np.concatenate([[0], ends]).astype(np.int32)
    last = np.array([n - (n - 1) // page_size * page_size if n else 0 for n in lens], np.int32)
    return pool[0], pool[1], (indptr, np.concatenate(pages).astype(np.int32), last), pages


LENS = [0, 1, 3, 4, 5, 8, 13, 16, 17]


@pytest.mark.floats
@pytest.mark.parametrize("heads, group", [(2, 1), (2, 2), (1, 4), (3, 3)])
@pytest.mark.parametrize("page_size", [1, 4])
@pytest.mark.parametrize("window", [None, 1, 2, 5, 6, 9])
def test_decode_matches_dense_attention_on_hand_built_pages(heads: int, group: int, page_size: int, window: int | None) -> None:
    """decode over hand-built tables (lengths 0 .. 4P + 1, pages in random order) equals dense float64 attention
    over each sequence's last W - 1 positions and its new token, within `tolerance`; without a new token, over
    the positions alone. A pool NaN everywhere decode must not read (other pages, the last page's tail, the
    positions before the window) gives the same bits."""
    rng = np.random.default_rng([heads, group, page_size, window or 0])
    d = 8
    k_pages, v_pages, tables, pages = hand_built(rng, LENS, heads, page_size, d)
    q = rng.standard_normal((len(LENS), heads * group, d)).astype(np.float32)
    k_new, v_new = (rng.standard_normal((len(LENS), heads, d)).astype(np.float16) for _ in "kv")
    keep = []
    for new in (True, False):
        got = decode(q, k_pages, v_pages, *tables, k_new=k_new if new else None, v_new=v_new if new else None, window=window)
        for i, n in enumerate(LENS):
            start = 0 if window is None else max(0, n - window + 1)
            k, v = (np.concatenate([x[p] for p in pages[i]] + [np.zeros((heads, 0, d), np.float16)], axis=1)[:, start:n] for x in (k_pages, v_pages))
            if new:
                k, v = np.concatenate([k, k_new[i][:, None]], axis=1), np.concatenate([v, v_new[i][:, None]], axis=1)
                shown = np.arange(start, n)
                keep += (pages[i][shown // page_size] * page_size + shown % page_size).tolist()
            assert_close(got[i], q[i], k, v, 1 / math.sqrt(d), f"sequence {i} (length {n})", f"decode, new token: {new}, window={window}")
        again = decode(q, poisoned(k_pages, np.array(keep, np.int64)), poisoned(v_pages, np.array(keep, np.int64)), *tables,
                       k_new=k_new if new else None, v_new=v_new if new else None, window=window)
        call = f"decode, new token: {new}, window={window}"
        assert_equal("decode with every slot it must not read NaN is finite", bool(np.isfinite(again).all()), True, call)
        assert_equal("decode with every slot it must not read NaN", again, got, call)


@pytest.mark.parametrize(
    "change",
    [
        ("last_page_len of 0 for a sequence with pages", lambda t: (t[0], t[1], np.array([0, 4]))),
        ("last_page_len above P", lambda t: (t[0], t[1], np.array([5, 4]))),
        ("indptr not ending at len(indices)", lambda t: (np.array([0, 1, 2]), t[1], t[2])),
        ("an index past the pool", lambda t: (t[0], np.array([0, 1, 99]), t[2])),
    ],
)
def test_decode_refuses_tables_flashinfer_takes(change: tuple[str, Any]) -> None:
    """Tables FlashInfer would read silently wrong (issue 51: a last_page_len of 0 drops a page, one above P reads
    past it) raise ValueError."""
    what, edit = change
    k_pages = np.zeros((4, 1, 4, 2), np.float16)
    tables = (np.array([0, 1, 3]), np.array([0, 1, 2]), np.array([4, 4]))
    q = np.zeros((2, 1, 2), np.float32)
    decode(q, k_pages, k_pages, *tables)  # the unchanged tables are accepted
    assert_raises(ValueError, f"decode over {what}", lambda: decode(q, k_pages, k_pages, *edit(tables)))


def test_write_slots_skips_padding() -> None:
    """write_slots puts each token at its flat slot and skips -1 (padding): every other slot keeps its bits, the
    pool's last slot too (Python's -1 index), as a slot-by-slot loop writes them."""
    rng = np.random.default_rng(51)
    k_pages, v_pages = (rng.standard_normal((3, 2, 4, 2)).astype(np.float16) for _ in "kv")
    slots = np.array([-1, 5, 0, -1, 11, 6, -1])
    k, v = (rng.standard_normal((slots.size, 2, 2)).astype(np.float32) for _ in "kv")
    want_k, want_v = k_pages.copy(), v_pages.copy()
    for i, slot in enumerate(slots.tolist()):
        if slot >= 0:
            want_k[slot // 4, :, slot % 4], want_v[slot // 4, :, slot % 4] = k[i], v[i]
    write_slots(k_pages, v_pages, slots, k, v)
    assert_equal("k_pages", k_pages, want_k, f"write_slots(slots={slots.tolist()})")
    assert_equal("v_pages", v_pages, want_v, f"write_slots(slots={slots.tolist()})")
    for bad in ([-2], [12]):
        before = k_pages.copy()
        assert_raises(ValueError, f"write_slots(slots={bad})", lambda: write_slots(k_pages, v_pages, np.array(bad), k[:1], v[:1]))
        assert_equal("k_pages after a refused write", k_pages, before, f"write_slots(slots={bad})")


def test_write_slots_refuses_bad_shapes() -> None:
    """Each argument of the wrong shape, even one NumPy would broadcast into the pool ([T, 1, D] for H = 2), raises
    ValueError and writes nothing."""
    rng = np.random.default_rng(52)
    k_pages, v_pages = (rng.standard_normal((3, 2, 4, 2)).astype(np.float16) for _ in "kv")
    slots = np.array([5, 0])
    k, v = (rng.standard_normal((2, 2, 2)).astype(np.float32) for _ in "kv")
    bad = [
        ("slots of shape (2, 1)", (k_pages, v_pages, slots[:, None], k, v)),
        ("k and v of shape (2, 1, 2)", (k_pages, v_pages, slots, k[:, :1], v[:, :1])),
        ("v of shape (2, 1, 2)", (k_pages, v_pages, slots, k, v[:, :1])),
        ("v_pages of one more page", (k_pages, np.concatenate([v_pages, v_pages[:1]]), slots, k, v)),
    ]
    for what, args in bad:
        before = k_pages.copy(), args[1].copy()
        assert_raises(ValueError, f"write_slots with {what}", lambda: write_slots(*args))
        for name, pool, was in zip(("k_pages", "v_pages"), (k_pages, args[1]), before):
            assert_equal(f"{name} after a refused write", pool, was, f"write_slots with {what}")


@pytest.mark.floats
def test_decode_with_a_given_scale() -> None:
    """`scale` given: the scores are q . k times it, not times 1 / sqrt(D) (dense attention at that scale)."""
    rng = np.random.default_rng(28)
    d, scale = 8, 0.9
    k_pages, v_pages, tables, pages = hand_built(rng, LENS, 2, 4, d)
    q = rng.standard_normal((len(LENS), 4, d)).astype(np.float32)
    got = decode(q, k_pages, v_pages, *tables, scale=scale)
    for i, n in enumerate(LENS):
        k, v = (np.concatenate([x[p] for p in pages[i]] + [np.zeros((2, 0, d), np.float16)], axis=1)[:, :n] for x in (k_pages, v_pages))
        assert_close(got[i], q[i], k, v, scale, f"sequence {i} (length {n})", f"decode(..., scale={scale})")


@pytest.mark.floats
def test_each_row_and_head_is_softmaxed_over_its_own_scores() -> None:
    """Query heads whose scores are hundreds apart in one batch (q's heads scaled by 1 and 100): each row and head
    subtracts its own maximum score, so none underflows to a weight sum of 0 (NaN) because another's are larger."""
    rng = np.random.default_rng(100)
    d = 8
    k_pages, v_pages, tables, pages = hand_built(rng, LENS, 2, 4, d)
    q = rng.standard_normal((len(LENS), 4, d)).astype(np.float32) * np.array([1, 100, 1, 100], np.float32)[:, None]
    k_new, v_new = (rng.standard_normal((len(LENS), 2, d)).astype(np.float16) for _ in "kv")
    got = decode(q, k_pages, v_pages, *tables, k_new=k_new, v_new=v_new)
    for i, n in enumerate(LENS):
        k, v = (np.concatenate([x[p] for p in pages[i]] + [new[i][:, None]], axis=1)[:, list(range(n)) + [-1]] for x, new in ((k_pages, k_new), (v_pages, v_new)))
        assert_close(got[i], q[i], k, v, 1 / math.sqrt(d), f"sequence {i} (length {n})", "decode, query heads scaled by 1 and 100")


@pytest.mark.floats
def test_attend_and_merge_state_give_float32_states() -> None:
    """attend and merge_state return float32 states (State), attend's output that of dense attention; with one key its
    log-sum-exp is the one score, within e = g(D + 2) sum_d |scale q_d k_d| (`tolerance`'s score error: exp(0) and
    log(1) are exact). merge_state, on values exact in float32: an empty state (0, -inf) leaves the other as it is,
    bit for bit; two empty ones merge into an empty one, silently (a row with no key is ordinary input); two of equal
    log-sum-exp L give their mean and L + log 2 (NumPy's float32 log within 4 ULP, 8u)."""
    rng = np.random.default_rng(44)
    q = rng.standard_normal((3, 4, 8)).astype(np.float32)
    k, v = (rng.standard_normal((3, 2, 5, 8)).astype(np.float16) for _ in "kv")
    scale = 1 / math.sqrt(8)
    out, lse = attend(q, k, v, scale)
    call = "attend(q [3, 4, 8], k, v [3, 2, 5, 8] float16)"
    assert_equal("attend's output and log-sum-exp dtypes", (out.dtype.name, lse.dtype.name), ("float32", "float32"), call)
    for i in range(3):
        assert_close(out[i], q[i], k[i], v[i], scale, f"row {i}", call)
    _, one = attend(q, k[:, :, :1], v[:, :, :1], scale)
    heads = np.repeat(k[:, :, 0].astype(np.float64), 2, axis=1)  # [n, Hq, D]: query head h reads KV head h // 2
    products = q.astype(np.float64) * scale * heads
    e = (8 + 2) * U / (1 - (8 + 2) * U) * np.abs(products).sum(axis=-1)
    err = np.abs(one.astype(np.float64) - products.sum(axis=-1))
    assert_equal("attend over one key: rows whose log-sum-exp is not the score within e", np.flatnonzero(err > e).tolist(), [], call)

    o = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)[None]  # [1, Hq = 2, D = 2]
    lse = np.array([[0.75, -3.0]], np.float32)
    empty_o, empty_lse = np.zeros_like(o), np.full_like(lse, -np.inf)
    for a, b in (((o, lse), (empty_o, empty_lse)), ((empty_o, empty_lse), (o, lse))):
        got = merge_state(*a, *b)
        assert_equal("merge_state with an empty state: dtypes", tuple(x.dtype.name for x in got), ("float32", "float32"), "merge_state")
        assert_equal("merge_state with an empty state: output", got[0], o, "merge_state")
        assert_equal("merge_state with an empty state: log-sum-exp", got[1], lse, "merge_state")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both_empty = merge_state(empty_o, empty_lse, empty_o, empty_lse)
    for name, got_x, want_x in zip(("output", "log-sum-exp"), both_empty, (empty_o, empty_lse)):
        assert_equal(f"merge_state of two empty states: {name}", got_x, want_x, "merge_state((0, -inf), (0, -inf))")
    mean, top = merge_state(o, lse, 3 * o, lse)
    assert_equal("merge_state of two states of equal log-sum-exp: output", mean, 2 * o, "merge_state((o, L), (3o, L))")
    err = np.abs(top.astype(np.float64) - (lse.astype(np.float64) + math.log(2)))
    bound = 8 * U * math.log(2) + U * np.abs(lse + math.log(2))  # top = L, weights 1, total 2 exact: the log, then the sum
    assert_equal("merge_state: heads whose log-sum-exp is not L + log 2 within 8u log 2 + u |L + log 2|", np.flatnonzero(err > bound).tolist(), [], "merge_state((o, L), (3o, L))")


def no_page(**change: Any) -> dict[str, Any]:
    """decode's arguments for one sequence with no page (nothing read: a wrong shape cannot fail by itself), changed."""
    args: dict[str, Any] = {"q": np.zeros((1, 2, 2), np.float32), "k_pages": np.zeros((4, 1, 4, 2), np.float16), "v_pages": np.zeros((4, 1, 4, 2), np.float16),
                            "indptr": np.array([0, 0]), "indices": np.zeros(0, np.int64), "last_page_len": np.array([0])}
    return {**args, **change}


BAD_DECODE = [
    ("k_pages of another D than q", no_page(k_pages=np.zeros((4, 1, 4, 3), np.float16), v_pages=np.zeros((4, 1, 4, 3), np.float16))),
    ("H not dividing Hq", no_page(q=np.zeros((1, 3, 2), np.float32), k_pages=np.zeros((4, 2, 4, 2), np.float16), v_pages=np.zeros((4, 2, 4, 2), np.float16))),
    ("v_pages of another shape than k_pages", no_page(v_pages=np.zeros((5, 1, 4, 2), np.float16))),
    ("v_new without k_new", no_page(v_new=np.zeros((1, 1, 2), np.float16))),
    ("k_new without v_new", no_page(k_new=np.zeros((1, 1, 2), np.float16))),
    ("indptr of n + 2 entries", no_page(indptr=np.array([0, 0, 0]))),
    ("last_page_len of shape ()", no_page(last_page_len=np.array(0))),
    ("indices of two dimensions", no_page(indices=np.zeros((0, 1), np.int64))),
    ("last_page_len of 1 for a sequence with no page", no_page(last_page_len=np.array([1]))),
    ("last_page_len of P for a sequence with no page", no_page(last_page_len=np.array([4]))),
    ("an index equal to the pool's page count", no_page(indptr=np.array([0, 1]), indices=np.array([4]), last_page_len=np.array([4]))),
]


@pytest.mark.parametrize("what, args", BAD_DECODE, ids=[w for w, _ in BAD_DECODE])
def test_decode_refuses_bad_shapes_and_tables(what: str, args: dict[str, Any]) -> None:
    """Each argument of the wrong shape, and tables that name no page of the pool or give a sequence with no page a
    last_page_len, raise ValueError, even where decode would read nothing (no page) and could answer 0."""
    arrays = ("q", "k_pages", "v_pages", "indptr", "indices", "last_page_len")
    options = {name: x for name, x in args.items() if name not in arrays}
    assert_raises(ValueError, f"decode over {what}", lambda: decode(*(args[name] for name in arrays), **options))


# -- through the implementation's exports ---------------------------------------------------------------------


@pytest.mark.floats
@pytest.mark.needs("page_tables", "prefix_caching", "hybrid")
def test_decode_over_the_exports_in_a_hybrid_model_with_prefix_hits_and_forks() -> None:
    """The issue's geometry: B = 4, prefix caching, layer_windows=(None, 4). Decode steps of sequences at lengths
    0 .. 3B + 1 (every length a multiple of P = 1, 2, 4 passes), a prefix hit served from the right, forks and
    their copies on write, the window's releases: each step's decode over page_table and kv_pages equals dense
    attention over the model's gather plus the new token, and is unchanged when every unshown slot is NaN."""
    rng = np.random.default_rng(2051)
    windows = (None, 4)
    pair = both(harness.impl(), 24, 4, 2, 2, 4, prefix_caching=True, layer_windows=windows)
    run(pair, "add_seq", 0)
    for _ in range(13):
        decode_step(pair, [0], windows, rng, "sequence 0 alone")
    system = [7, 1, 8, 2, 8, 1, 8, 2, 8, 4]
    prompt(pair, 1, system, rng)
    served = prompt(pair, 2, system[:9] + [30], rng)
    assert_equal("positions served to sequence 2", served, 8, "add_seq(2, its prompt): two blocks of sequence 1's, a hit")
    run(pair, "fork", 1, 3)
    for step in range(7):
        decode_step(pair, [0, 1, 2, 3], windows, rng, f"after the hit and the fork, step {step}")
    run(pair, "free", 1)
    decode_step(pair, [3, 0], windows, rng, "after freeing the fork's parent")


@pytest.mark.floats
@pytest.mark.needs("page_tables", "sliding_window")
def test_decode_over_the_exports_at_the_window_boundary() -> None:
    """W = 6, B = 4: decode steps through every length to 4B, so through the lengths where n - W + 1 is a
    multiple of B and the append after the step releases the block the window's oldest position sat in (the
    decode order the contract pins): no released block in indices, the output that of the window."""
    rng = np.random.default_rng(6)
    pair = both(harness.impl(), 16, 4, 1, 2, 8, sliding_window=6)
    for s in (0, 1):
        run(pair, "add_seq", s)
    decode_step(pair, [0], (6,), rng, "sequence 0 alone")
    for step in range(16):
        decode_step(pair, [0, 1], (6,), rng, f"step {step}")


class KernelTwin:
    """A cache for the toy decoder: the implementation in step with the model (`InStep`) and the contiguous cache,
    every call on each. At each decode step (a one-token append) of each layer, before the append, decode over the
    implementation's exports equals dense attention over the contiguous cache's gather plus the token."""

    def __init__(self, pair: tuple[Any, Any], contiguous: ContiguousKVCache, windows: Sequence[int | None], rng: np.random.Generator) -> None:
        self.pair, self.paged, self.contiguous, self.windows, self.rng = pair, InStep(*pair), contiguous, windows, rng
        self.checked = 0

    def append(self, seq_id: int, layer: int, k: np.ndarray, v: np.ndarray) -> None:
        if k.shape[1] == 1:
            cache = self.pair[0]
            tables = cache.page_table([seq_id], layer)
            k_new, v_new = k[:, 0].astype(np.float16)[None], v[:, 0].astype(np.float16)[None]
            q = self.rng.standard_normal((1, 2 * k.shape[0], k.shape[2])).astype(np.float32)
            got = decode(q, *cache.kv_pages(layer), *tables, k_new=k_new, v_new=v_new, window=self.windows[layer])
            past_k, past_v = self.contiguous.gather(seq_id, layer)
            kk, vv = np.concatenate([past_k, k_new[0][:, None]], axis=1), np.concatenate([past_v, v_new[0][:, None]], axis=1)
            assert_close(got[0], q[0], kk, vv, 1 / math.sqrt(k.shape[2]), f"sequence {seq_id}, layer {layer}",
                         f"decode over page_table([{seq_id}], {layer}) against the contiguous cache's gather")
            self.checked += 1
        self.paged.append(seq_id, layer, k, v)
        self.contiguous.append(seq_id, layer, k, v)

    def fork(self, parent: int, child: int) -> None:
        self.paged.fork(parent, child)
        self.contiguous.fork(parent, child)

    def gather(self, seq_id: int, layer: int) -> tuple[np.ndarray, np.ndarray]:
        got: tuple[np.ndarray, np.ndarray] = self.paged.gather(seq_id, layer)
        return got

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        return int(self.paged.seq_len(seq_id, layer))


@pytest.mark.floats
@pytest.mark.parametrize(
    "windows",
    [
        pytest.param((None, None), marks=pytest.mark.needs("page_tables")),
        pytest.param((6, 6), marks=pytest.mark.needs("page_tables", "sliding_window")),
        pytest.param((None, 6), marks=pytest.mark.needs("page_tables", "hybrid")),
    ],
)
def test_paged_matches_contiguous_decoding_through_the_kernel_inputs(windows: tuple[int | None, int | None]) -> None:
    """The seed's paged-matches-contiguous test through what a kernel reads: the toy decoder over the
    implementation (prompt, greedy steps, two forked branches), each decode step's attention recomputed by
    decode over page_table and kv_pages and checked against dense attention over the contiguous cache's
    gather (same windows) and the token, within `tolerance`."""
    options: dict[str, Any] = {} if windows[0] is None and windows[1] is None else (
        {"sliding_window": windows[0]} if windows[0] == windows[1] else {"layer_windows": windows})
    decoder = ToyDecoder(vocab=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_head=8, seed=1, layer_windows=windows)
    twin = KernelTwin(both(harness.impl(), 64, 4, 2, 2, 8, **options), ContiguousKVCache(64, 2, 2, 8, layer_windows=windows), windows, np.random.default_rng(1))
    twin.paged.add_seq(0)
    twin.contiguous.add_seq(0)
    logits = decoder.forward(twin, 0, [3, 17, 5, 42, 8, 8, 1, 30, 12, 7, 9])
    ids, _ = decoder.greedy(twin, 0, int(np.argmax(logits[-1])), 4)
    for child, first in ((1, ids[-1]), (2, (ids[-1] + 1) % 64)):
        twin.fork(0, child)
        decoder.greedy(twin, child, first, 6)
    assert_equal("decode steps checked", twin.checked, 2 * (4 + 6 + 6), "four greedy steps and two branches of six, two layers")


@pytest.mark.needs("page_tables", "sliding_window")
def test_rewriting_every_position_through_slot_mapping_changes_no_bit() -> None:
    """W = 6, B = 4, 17 positions written: slot_mapping over every position has a -1 for each position whose block
    the window released. write_slots of every position's own K and V through it, into a copy of kv_pages, leaves
    the copy equal to the pool, bit for bit: the padding slots are skipped, never written to the last slot."""
    rng = np.random.default_rng(17)
    pair = both(harness.impl(), 8, 4, 1, 2, 4, sliding_window=6)
    run(pair, "add_seq", 0)
    k, v = (rng.standard_normal((2, 17, 4)).astype(np.float16) for _ in "kv")
    for pos in range(0, 17, 3):
        run(pair, "append", 0, 0, k[:, pos : pos + 3], v[:, pos : pos + 3])
    slots = pair[0].slot_mapping(0, 0, 0, 17)
    assert_equal("padding slots in slot_mapping(0, 0, 0, 17)", int((slots == -1).sum()), 12, "positions 0 .. 11: the three blocks the window released")
    pool_k, pool_v = (np.array(x) for x in pair[0].kv_pages(0))
    copy_k, copy_v = pool_k.copy(), pool_v.copy()
    write_slots(copy_k, copy_v, slots, k.transpose(1, 0, 2), v.transpose(1, 0, 2))
    call = "write_slots(copy of kv_pages(0), slot_mapping(0, 0, 0, 17), every position's K and V)"
    assert_equal("K pages", copy_k, pool_k, call)
    assert_equal("V pages", copy_v, pool_v, call)
