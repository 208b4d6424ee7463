"""The contiguous float16 KV cache (the seed's L8.2 oracle).

Every sequence preallocates `max_len` positions for every layer, K and V, whatever
length it reaches; a fork copies all of it. Simple, and the memory cost that paging
wins back. Same calls as the paged cache where they mean the same thing. With `sliding_window=W`
it still keeps every position, and `gather` returns the window, the last W - 1 (CONTRACT.md); with
`layer_windows` (a hybrid model), each layer's own window.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


class ContiguousKVCache:
    """Per sequence, K and V arrays `[L, H, max_len, D]` in `dtype` (float16 by default)."""

    def __init__(
        self,
        max_len: int,
        n_layers: int,
        n_kv_heads: int,
        d_head: int,
        dtype: Any = np.float16,
        sliding_window: int | None = None,
        layer_windows: Sequence[int | None] | None = None,
    ) -> None:
        self.max_len, self.n_layers, self.n_kv_heads, self.d_head = max_len, n_layers, n_kv_heads, d_head
        assert sliding_window is None or layer_windows is None, "sliding_window is the shorthand of layer_windows"
        self.window = sliding_window
        self.windows = list(layer_windows) if layer_windows is not None else [sliding_window] * n_layers  # each layer's
        self.dtype = np.dtype(dtype)
        self.k: dict[int, np.ndarray] = {}
        self.v: dict[int, np.ndarray] = {}
        self.lens: dict[int, list[int]] = {}

    def add_seq(self, seq_id: int) -> None:
        if seq_id in self.k:
            raise ValueError(f"sequence {seq_id} is live")
        shape = (self.n_layers, self.n_kv_heads, self.max_len, self.d_head)
        self.k[seq_id] = np.zeros(shape, dtype=self.dtype)
        self.v[seq_id] = np.zeros(shape, dtype=self.dtype)
        self.lens[seq_id] = [0] * self.n_layers

    def fork(self, parent: int, child: int) -> None:
        if child in self.k:
            raise ValueError(f"sequence {child} is live")
        self.k[child] = self.k[parent].copy()
        self.v[child] = self.v[parent].copy()
        self.lens[child] = list(self.lens[parent])

    def append(self, seq_id: int, layer: int, k: np.ndarray, v: np.ndarray) -> None:
        """Store k, v `[H, T, D]` at positions seq_len .. seq_len+T-1 of the layer."""
        if k.shape != v.shape or k.ndim != 3 or k.shape[1] == 0:
            raise ValueError(f"bad chunk shapes {k.shape}, {v.shape}")
        start = self.lens[seq_id][layer]
        end = start + k.shape[1]
        if end > self.max_len:
            raise ValueError(f"sequence {seq_id} would exceed max_len {self.max_len}")
        self.k[seq_id][layer, :, start:end] = k
        self.v[seq_id][layer, :, start:end] = v
        self.lens[seq_id][layer] = end

    def gather(self, seq_id: int, layer: int) -> tuple[np.ndarray, np.ndarray]:
        n, window = self.lens[seq_id][layer], self.windows[layer]
        start = 0 if window is None else max(0, n - window + 1)
        return self.k[seq_id][layer, :, start:n].copy(), self.v[seq_id][layer, :, start:n].copy()

    def seq_len(self, seq_id: int, layer: int = 0) -> int:
        return self.lens[seq_id][layer]

    def free(self, seq_id: int) -> None:
        del self.k[seq_id], self.v[seq_id], self.lens[seq_id]

    def nbytes(self) -> int:
        """Bytes held by every live sequence's K and V."""
        return sum(a.nbytes for a in self.k.values()) + sum(a.nbytes for a in self.v.values())
