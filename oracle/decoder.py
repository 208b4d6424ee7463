"""A toy two-layer decoder that runs the same on any KV cache with append/gather/seq_len.

Seeded random weights, float32 maths, grouped-query attention over the K/V the
cache gathers. The cache rounds K and V to float16; a paged and a contiguous
float16 cache must therefore give the same logits and the same greedy tokens.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class _Cache(Protocol):
    def append(self, seq_id: int, layer: int, k: Any, v: Any) -> None: ...
    def gather(self, seq_id: int, layer: int) -> tuple[Any, Any]: ...
    def seq_len(self, seq_id: int, layer: int = 0) -> int: ...


def _rms_norm(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6)


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
    ) -> None:
        assert n_heads % n_kv_heads == 0
        rng = np.random.default_rng(seed)

        def w(*shape: int) -> np.ndarray:
            return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

        self.n_layers, self.n_heads, self.n_kv_heads, self.d_head = n_layers, n_heads, n_kv_heads, d_head
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
            q = (h @ p["q"]).reshape(n, self.n_heads, self.d_head).transpose(1, 0, 2)
            k = (h @ p["k"]).reshape(n, self.n_kv_heads, self.d_head).transpose(1, 0, 2)
            v = (h @ p["v"]).reshape(n, self.n_kv_heads, self.d_head).transpose(1, 0, 2)
            cache.append(seq_id, layer, k, v)
            k_all, v_all = (np.repeat(a.astype(np.float32), group, axis=0) for a in cache.gather(seq_id, layer))
            scores = q @ k_all.transpose(0, 2, 1) / np.float32(np.sqrt(self.d_head))  # [heads, n, len]
            visible = np.arange(k_all.shape[1])[None, :] <= (start + np.arange(n))[:, None]
            scores = np.where(visible, scores, np.float32(-np.inf))
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            attn = (scores / scores.sum(axis=-1, keepdims=True)) @ v_all  # [heads, n, d_head]
            x = x + attn.transpose(1, 0, 2).reshape(n, -1) @ p["o"]
            x = x + np.maximum(_rms_norm(x) @ p["up"], 0) @ p["down"]
        return (_rms_norm(x) @ self.unembed).astype(np.float32)

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
