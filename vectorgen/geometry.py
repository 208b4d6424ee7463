"""The geometries real engines run (issue 35): blocks of 8, 16 and 32 positions, 4 to 30 layers
(SmolLM2, the seed's model: L = 30, H = 3, D = 64, B = 16), up to 8 KV heads and D = 128, and sliding
windows of up to 4,096 positions that release blocks; with a fork, copy on write, a prefix hit and
OutOfBlocks at those sizes. A port whose copy on write, or window, goes wrong only at such sizes
differs here, where the small geometries of the other families never showed it.

A position of D = 128, H = 8 is 1,024 values a tensor, 8 KB of hex for K and V: the sessions write
few positions and gather a few chosen layers (every layer's length and every table are still
asked), so each file stays under about 200 KB. K and V are any float16 bit patterns
(`float16.any_bits`), the specials among them.
"""

from __future__ import annotations

from typing import Any, Callable

from oracle.as_impl import OutOfBlocks
from vectorgen.float16 import any_bits
from vectorgen.script import Script, Vector

VECTORS: list[Vector] = []


def look(s: Script, c: Any, seqs: list[int], layers: tuple[int, ...]) -> None:
    """stats, the free count, and each sequence's table and every layer's length; gathers of `layers` only."""
    c.stats()
    c.num_free_blocks()
    for seq in seqs:
        c.block_table(seq)
        for layer in range(s.layers[id(c)]):
            c.seq_len(seq, layer)
        for layer in layers:
            c.gather(seq, layer)


def one_each(c: Any, seq: int, sizes: tuple[int, ...], seed: int) -> None:
    """One position in every layer of `seq` (sizes: N, B, L, H, D)."""
    _, _, layers, heads, dims = sizes
    for layer in range(layers):
        c.append(seq, layer, *any_bits(heads, 1, dims, seed + layer))


def cow_session(vid: str, sizes: tuple[int, int, int, int, int], seen: tuple[int, ...], note: str) -> Vector:
    """A pool of sizes[0] blocks: a one-position prompt in every layer, a fork whose write into a layer copies the
    shared block (every layer's data), the parent writing in place, then other sequences fill the pool so that a
    fork's copy on write runs out (OutOfBlocks, nothing changes), and succeeds once a block is freed."""
    n, b, layers, heads, dims = sizes

    def make() -> Script:
        s = Script(
            f"geometry-{vid}",
            f"N = {n}, B = {b}, L = {layers}, H = {heads}, D = {dims} ({note}): one position in every layer, a fork, the child's "
            f"write into layer {layers - 1} copies the shared block with every layer's data, the parent writes in place; "
            f"the pool filled, a copy on write is refused (OutOfBlocks) and taken once a block is freed; gathers of layers {', '.join(map(str, seen))}",
            "engine-geometry copy-on-write out-of-blocks layers allocation-order",
        )
        c = s.new(*sizes)
        c.add_seq(0)
        one_each(c, 0, sizes, 10)
        look(s, c, [0], seen)
        c.fork(0, 1)
        c.append(1, layers - 1, *any_bits(heads, 1, dims, 100))  # block 0 is shared: copied, every layer
        look(s, c, [0, 1], seen)
        c.append(0, 0, *any_bits(heads, 1, dims, 101))  # block 0 has one holder again: in place
        look(s, c, [0, 1], seen[:1])
        c.fork(1, 2)
        fillers = list(range(3, 3 + n - 2))  # the pool's other blocks, one position each
        for seq in fillers:
            c.add_seq(seq)
            c.append(seq, 0, *any_bits(heads, 1, dims, 200 + seq))
        s.attempt(c.append, 2, 0, *any_bits(heads, 1, dims, 300))  # a copy of block 1 is needed; none is free
        look(s, c, [1, 2], ())
        c.free(fillers[-1])
        c.append(2, 0, *any_bits(heads, 1, dims, 300))
        look(s, c, [1, 2], seen)
        return s

    make.__name__ = f"geometry_{vid.replace('-', '_')}"
    return make


VECTORS += [
    cow_session("smollm2", (6, 16, 30, 3, 64), (1, 29), "SmolLM2's geometry"),
    cow_session("engine-b32-h8-d128", (4, 32, 4, 8, 128), (3,), "a serving engine's blocks, KV heads and head size"),
    cow_session("b8-l4-h4", (4, 8, 4, 4, 2), (0, 1, 2, 3), "the smallest of each: a small file, every layer gathered"),
    cow_session("b16-l30-h8", (4, 16, 30, 8, 1), (0, 1, 15, 29), "many layers and heads, D = 1"),
]


def prefix_session(s: Script, c: Any, layers: int, b: int) -> None:
    """A prompt of 2B + 1 tokens computed, the same prompt served 2B positions, a fork of the served sequence and
    both decoding (the fork's write copies the shared partial block), then a prompt too long for the pool."""
    prompt = [7 + i % 5 for i in range(2 * b + 1)]

    def prefill(seq: int, seed: int) -> None:
        start = c.seq_len(seq, 0)
        for layer in range(layers):
            c.append(seq, layer, *any_bits(1, len(prompt) - start, 2, seed + layer))

    c.add_seq(0, prompt)
    prefill(0, 400)
    look(s, c, [0], (0, layers - 1))
    c.add_seq(1, prompt)  # 2B served: blocks 0 and 1
    prefill(1, 500)
    c.fork(1, 2)
    for seq in (1, 2):
        c.extend(seq, [seq])
        for layer in range(layers):
            c.append(seq, layer, *any_bits(1, 1, 2, 600 + 10 * seq + layer))  # seq 2 first: its write copies block 3
    look(s, c, [0, 1, 2], (0, layers - 1))
    c.free(0)
    c.free(1)
    free = c.num_free_blocks()
    long = [9] * ((free + 1) * b)  # one block more than free plus cached: refused after the hit on nothing
    c.add_seq(3, long)
    s.attempt(c.append, 3, 0, *any_bits(1, len(long), 2, 700))
    c.add_seq(4, prompt + [3])  # blocks 0 and 1 still cached: 2B served
    look(s, c, [2, 3, 4], (layers - 1,))


def prefix_vector(b: int, layers: int) -> Vector:
    vid = f"geometry-prefix-b{b}-l{layers}"

    def make() -> Script:
        s = Script(
            vid,
            f"B = {b}, L = {layers}, prefix caching: a prompt of 2B + 1 tokens computed, the same prompt served 2B positions, "
            "a fork of the served sequence and both decoding (copy on write of the shared partial block), a prompt one block "
            "too long for the pool (OutOfBlocks), the cached blocks served again",
            "engine-geometry prefix-caching copy-on-write out-of-blocks layers",
        )
        prefix_session(s, s.new(8, b, layers, 1, 2, prefix_caching=True), layers, b)
        return s

    make.__name__ = vid.replace("-", "_")
    return make


VECTORS += [prefix_vector(16, 30), prefix_vector(32, 4)]


def decode_to(c: Any, seqs: list[int], layers: int, target: int, seed: int, each: Callable[[], object]) -> None:
    """One position at a time in every layer of each of `seqs`, until layer 0 of the first holds `target`."""
    while c.seq_len(seqs[0], 0) < target:
        for seq in seqs:
            for layer in range(layers):
                c.append(seq, layer, *any_bits(1, 1, 1, seed + 7 * c.seq_len(seq, layer) + layer))
        each()


def window_vector(b: int, window: int, layers: int, blocks: int) -> Vector:
    """A window W >= 10: a prompt to one position short of W, then decode steps across the releases of the first
    blocks, a fork and a copy on write of the shared tail, OutOfBlocks, and gathers of the window at its edges."""
    vid = f"window-geometry-b{b}-w{window}"
    first = window - 1 + b  # the length at which block 0 is released: (0 + 1) * B <= n - W + 1

    def make() -> Script:
        s = Script(
            vid,
            f"B = {b}, W = {window}, L = {layers}, H = D = 1: a prompt of W - 1 positions, decode steps across the releases of "
            f"blocks 0 and 1 (at lengths {first} and {first + b}, each step's table asked), the window gathered at its edges, "
            "a fork whose write copies the shared tail block, then the pool runs out (OutOfBlocks)",
            "engine-geometry sliding-window copy-on-write out-of-blocks layers",
        )
        c = s.new(blocks, b, layers, 1, 1, sliding_window=window)
        edges = (0,) if window < 100 else ()  # a window of thousands is gathered after its releases only (33 KB each)
        c.add_seq(0)
        for layer in range(layers):
            c.append(0, layer, *any_bits(1, window - 1, 1, 800 + layer))
        look(s, c, [0], edges)

        def step() -> None:
            c.block_table(0)
            c.stats()

        decode_to(c, [0], layers, first - 1, 900, step)
        look(s, c, [0], edges)  # one position short of block 0's release
        decode_to(c, [0], layers, first, 900, step)
        look(s, c, [0], (0,))
        c.fork(0, 1)
        c.append(1, 0, *any_bits(1, 1, 1, 950))  # the shared tail block copied; the child's window moves on
        look(s, c, [0, 1], edges)
        decode_to(c, [0, 1], layers, first + b, 1000, lambda: (c.block_table(0), c.block_table(1), c.stats()))
        look(s, c, [1], (layers - 1,))
        look(s, c, [0], edges)
        free = c.num_free_blocks()
        s.attempt(c.append, 1, 0, *any_bits(1, (free + 1) * b, 1, 1100))  # a block more than the pool has
        c.free(0)
        look(s, c, [1], ())
        return s

    make.__name__ = vid.replace("-", "_")
    return make


# An engine's window (W - 1 not a multiple of B), W - 1 a multiple of B, the least W >= 10.
VECTORS += [window_vector(16, 4096, 2, 262), window_vector(32, 33, 4, 12), window_vector(8, 10, 4, 12)]


def window_prefix_vector() -> Vector:
    """W = 4,096 with prefix caching: released blocks cached, a hit served from the right over 256 blocks."""
    vid = "window-geometry-b16-w4096-prefix"

    def make() -> Script:
        s = Script(
            vid,
            "B = 16, W = 4,096 (need = 256 blocks), two layers, prefix caching: a prompt of 4,200 tokens computed, its first "
            "blocks released and cached; the same prompt and a longer one served from the right (the table's first entries "
            "-1), a fork, decode steps, then a prompt too long for the pool (OutOfBlocks)",
            "engine-geometry sliding-window prefix-caching copy-on-write out-of-blocks",
        )
        c = s.new(280, 16, 2, 1, 1, prefix_caching=True, sliding_window=4096)
        prompt = [i % 3 for i in range(4200)]
        c.add_seq(0, prompt)
        for layer in range(2):
            c.append(0, layer, *any_bits(1, len(prompt), 1, 1200 + layer))
        look(s, c, [0], ())
        c.add_seq(1, prompt + [1])  # k = 262, its last 256 keys registered (blocks 6 .. 261)
        look(s, c, [1], (0,))
        try:
            c.fork(1, 2)
            for seq in (1, 2):
                c.extend(seq, [2, 2])
                for layer in range(2):
                    c.append(seq, layer, *any_bits(1, 2, 1, 1300 + 10 * seq + layer))
            look(s, c, [1, 2], (1,))
        except OutOfBlocks:
            raise AssertionError(f"{vid}: the session was written to fit its pool") from None
        free = c.num_free_blocks()
        c.add_seq(3, [5] * ((free + 1) * 16))
        s.attempt(c.append, 3, 0, *any_bits(1, (free + 1) * 16, 1, 1400))
        look(s, c, [1, 2, 3], ())
        return s

    make.__name__ = vid.replace("-", "_")
    return make


VECTORS.append(window_prefix_vector())
