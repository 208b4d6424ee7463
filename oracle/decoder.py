"""A toy two-layer decoder that runs the same on any KV cache with append/gather/seq_len.

Seeded random weights, float32 maths, grouped-query attention over the K/V the
cache gathers. The cache rounds K and V to float16; a paged and a contiguous
float16 cache must therefore give the same logits and the same greedy tokens.

Every value is a function of its own token's row and the K/V before it, never of how
many rows share a call, so feeding a prompt at once, in chunks or one token at a time
gives the same bits. That is why it uses no BLAS: a matmul's summation order depends on
the kernel (OpenBLAS picks one per CPU), the thread count and the number of rows, so
logits from a 14-row prompt and a 2-row one could differ in the last bit and round K/V to
different float16s. Each sum here is taken in index order, one correctly rounded float32
add or multiply at a time (`_dot`, `_sum`), and `exp` is the C library's, value by value.

With `window=W` (sliding-window attention, CONTRACT.md "Sliding window") the token at position p
attends to positions p-W+1 .. p only. Each layer gathers the cache before it appends the chunk and
attends over what it gathered and the chunk's own K and V (rounded to the gathered dtype, as the
cache stores them), so a windowed cache, which keeps only the W-1 positions before the next token, serves it.
A masked position weighs exactly 0, so a full cache gives the same bits as a windowed one.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import numpy as np


class _Cache(Protocol):
    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None: ...
    def gather(self, seq_id: int, layer: int) -> tuple[Any, Any]: ...
    def seq_len(self, seq_id: int, layer: int = 0) -> int: ...


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a @ b` (batched like matmul), each entry summed over k = 0, 1, ... in order, in float32."""
    acc: np.ndarray = a[..., :, 0:1] * b[..., 0:1, :]
    for k in range(1, a.shape[-1]):
        acc = acc + a[..., :, k : k + 1] * b[..., k : k + 1, :]
    return acc


def _sum(x: np.ndarray) -> np.ndarray:
    """The sum over the last axis, in index order, keeping that axis (length 1)."""
    acc: np.ndarray = x[..., 0:1]
    for j in range(1, x.shape[-1]):
        acc = acc + x[..., j : j + 1]
    return acc


_exp = np.frompyfunc(math.exp, 1, 1)


def _rms_norm(x: np.ndarray) -> np.ndarray:
    norm: np.ndarray = x / np.sqrt(_sum(x * x) / np.float32(x.shape[-1]) + np.float32(1e-6))
    return norm


class ToyDecoder:
    """Embedding, `n_layers` attention blocks with a ReLU MLP, and an unembedding."""

    def __init__(
        self,
        vocab: int = 64,
        d_model: int = 32,
        n_layers: int = 2,
        n_heads: int = 4,
        n_kv_heads: int = 2,
        d_head: int = 8,
        max_pos: int = 256,
        seed: int = 0,
        window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        """`window`: every layer's sliding window; `layer_windows`: each layer's (None: full attention), a hybrid
        model; at most one of them."""
        assert n_heads % n_kv_heads == 0
        assert window is None or layer_windows is None, "window is the shorthand of layer_windows=(window,) * n_layers"
        rng = np.random.default_rng(seed)

        def w(*shape: int) -> np.ndarray:
            weights: np.ndarray = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
            return weights

        self.n_layers, self.n_heads, self.n_kv_heads, self.d_head = n_layers, n_heads, n_kv_heads, d_head
        self.window = window
        self.windows = list(layer_windows) if layer_windows is not None else [window] * n_layers  # each layer's
        assert len(self.windows) == n_layers
        self.embed = w(vocab, d_model) * np.float32(np.sqrt(vocab))
        self.pos = w(max_pos, d_model)
        self.layers = [
            {
                "q": w(d_model, n_heads * d_head),
                "k": w(d_model, n_kv_heads * d_head),
                "v": w(d_model, n_kv_heads * d_head),
                "o": w(n_heads * d_head, d_model),
                "up": w(d_model, 4 * d_model),
                "down": w(4 * d_model, d_model),
            }
            for _ in range(n_layers)
        ]
        self.unembed = w(d_model, vocab)

    def forward(self, cache: _Cache, seq_id: int, tokens: list[int]) -> np.ndarray:
        """Append the tokens' K and V to every layer, in order; return float32 logits `[T, vocab]`."""
        start = cache.seq_len(seq_id, 0)
        n = len(tokens)
        x = self.embed[np.asarray(tokens)] + self.pos[start : start + n]
        group = self.n_heads // self.n_kv_heads
        for layer, p in enumerate(self.layers):
            h = _rms_norm(x)
            q = _dot(h, p["q"]).reshape(n, self.n_heads, self.d_head).transpose(1, 0, 2)
            k = _dot(h, p["k"]).reshape(n, self.n_kv_heads, self.d_head).transpose(1, 0, 2)
            v = _dot(h, p["v"]).reshape(n, self.n_kv_heads, self.d_head).transpose(1, 0, 2)
            past_k, past_v = cache.gather(seq_id, layer)  # the positions before the chunk that the cache keeps
            cache.append(seq_id, layer, k, v)
            k_all, v_all = (
                np.repeat(np.concatenate([past, new.astype(past.dtype)], axis=1).astype(np.float32), group, axis=0)
                for past, new in ((past_k, k), (past_v, v))
            )
            scores = _dot(q, k_all.transpose(0, 2, 1)) / np.float32(np.sqrt(self.d_head))  # [heads, n, len]
            key_pos = start - past_k.shape[1] + np.arange(k_all.shape[1])[None, :]  # each key's position
            query_pos = (start + np.arange(n))[:, None]
            visible = key_pos <= query_pos
            window = self.windows[layer]
            if window is not None:
                visible &= key_pos > query_pos - window
            scores = np.where(visible, scores, np.float32(-np.inf))
            # the masked positions weigh exactly 0, so a row's sums do not depend on how many follow it
            weights = _exp(scores - scores.max(axis=-1, keepdims=True)).astype(np.float32)
            attn = _dot(weights / _sum(weights), v_all)  # [heads, n, d_head]
            x = x + _dot(attn.transpose(1, 0, 2).reshape(n, -1), p["o"])
            x = x + _dot(np.maximum(_dot(_rms_norm(x), p["up"]), np.float32(0)), p["down"])
        logits: np.ndarray = _dot(_rms_norm(x), self.unembed).astype(np.float32)
        return logits

    def greedy(self, cache: _Cache, seq_id: int, first: int, steps: int) -> tuple[list[int], list[np.ndarray]]:
        """Feed `first`, then each argmax, `steps` times; return the ids and each step's logits."""
        ids, logits = [], []
        token = first
        for _ in range(steps):
            out = self.forward(cache, seq_id, [token])[-1]
            token = int(np.argmax(out))
            ids.append(token)
            logits.append(out)
        return ids, logits
