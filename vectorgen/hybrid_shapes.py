"""Hybrid models at the shapes engines build them (issue 52): GPT-OSS's and Gemma 2's alternating window and
full-attention layers (a group's layers are every other layer), Gemma 3's five local layers to one global over 26
layers (W = 1,024, B = 16), three and four groups whose layers interleave, each with prefix caching on and
off, a fork, copies on write and OutOfBlocks. A port whose groups go wrong only past three groups, past eight
layers, at B >= 8 or when a group's layers are not adjacent differs here, where the small hybrid vectors of
hybrid.py never showed it.

Few positions carry data (H = D = 1) and only a few layers are gathered, while every layer's table and length is
asked (`look`), so the files stay small and replay in seconds.
"""

from __future__ import annotations

from typing import Any

from oracle.as_impl import OutOfBlocks
from vectorgen.float16 import any_bits
from vectorgen.script import Script, Vector

VECTORS: list[Vector] = []


def look(s: Script, c: Any, seqs: list[int], gathered: tuple[int, ...]) -> None:
    """stats, the free count, each sequence's every layer's table and length; gathers of `gathered` only."""
    c.stats()
    c.num_free_blocks()
    for seq in seqs:
        for layer in range(s.layers[id(c)]):
            c.block_table(seq, layer)
            c.seq_len(seq, layer)
        for layer in gathered:
            c.gather(seq, layer)


def prefill(c: Any, seq: int, layers: list[int], upto: int, seed: int) -> None:
    """Positions seq_len .. upto-1 of each of `layers` of `seq`, one append a layer."""
    for layer in layers:
        start = c.seq_len(seq, layer)
        if upto > start:
            c.append(seq, layer, *any_bits(1, upto - start, 1, seed + layer))


def session(vid: str, note: str, block: int, windows: tuple[int | None, ...], caching: bool, gathered: tuple[int, ...]) -> Vector:
    """A prompt prefilled window layers first (the full-attention layers between them still empty, then filled), a
    second sequence of the same prompt (served, with prefix caching), a fork whose decode steps copy each group's
    shared tail and cross a block boundary of every window, OutOfBlocks, frees and the prompt again."""
    layers = len(windows)
    widest = max(w for w in windows if w is not None)
    length = widest + block + 2  # every window group has released a block
    windowed = [i for i, w in enumerate(windows) if w is not None]
    full = [i for i, w in enumerate(windows) if w is None]
    name = vid + ("-prefix" if caching else "")

    def make() -> Script:
        s = Script(
            name,
            f"{note}: B = {block}, L = {layers}, layer_windows={windows}" + (", prefix caching" if caching else "")
            + f": a prompt of {length} tokens prefilled window layers first (the full-attention layers between them still "
            "empty), then the others; the same prompt again (served) or a fork, a fork whose decode steps copy every group's shared tail "
            f"and cross a block boundary of every window, OutOfBlocks, frees and the prompt again (served) or another; every layer's table "
            f"and length, gathers of layers {', '.join(map(str, gathered))}",
            "hybrid engine-geometry copy-on-write out-of-blocks layers" + (" prefix-caching" if caching else ""),
        )
        blocks = 4 * (-(-(length + block) // block)) * len(set(windows))
        c = s.new(blocks, block, layers, 1, 1, prefix_caching=caching, layer_windows=windows)
        prompt = [1 + i % 5 for i in range(length)]
        try:
            c.add_seq(0, prompt)
            prefill(c, 0, windowed, length, 100)
            look(s, c, [0], gathered)
            prefill(c, 0, full, length, 100)
            look(s, c, [0], gathered)
            if caching:  # served, all but its last block
                c.add_seq(1, prompt)
                prefill(c, 1, list(range(layers)), length, 200)
            else:
                c.fork(0, 1)
            c.fork(1, 2)
            for step in range(block + 1):
                for seq in (2, 1):  # the child first: its first write into each group's shared tail copies it
                    c.extend(seq, [seq])
                    prefill(c, seq, list(range(layers)), length + step + 1, 300 + 7 * step + seq)
                if step in (0, block):
                    look(s, c, [1, 2], gathered)
                else:
                    c.block_table(2, windowed[-1])
                    c.stats()
        except OutOfBlocks:
            raise AssertionError(f"{name}: the session was written to fit its pool") from None
        free = c.num_free_blocks()
        c.add_seq(3, [9] * ((free + 1) * block))
        s.attempt(c.append, 3, windowed[0], *any_bits(1, (free + 1) * block, 1, 400))  # a block more than can be taken
        look(s, c, [3], ())
        for seq in (0, 3, 1):
            c.free(seq)
        c.stats()
        again = prompt + [6] if caching else [6] * (2 * block + 1)  # served again, or a short prompt of its own
        c.add_seq(4, again)
        prefill(c, 4, list(range(layers)), len(again), 500)
        look(s, c, [2, 4], gathered)
        return s

    make.__name__ = name.replace("-", "_")
    return make


ALTERNATING = (128, None) * 12  # GPT-OSS: 24 layers, window 128 and full attention in turn (Gemma 2: 4,096)
GEMMA3 = ((1024,) * 5 + (None,)) * 4 + (1024, 1024)  # Gemma 3 1B's 26 layers: five local (1,024) to one global
FOUR_GROUPS = (16, None, 24, 40, 16, None, 24, 40, 40)  # three windows and full attention, each group's layers apart

VECTORS += [
    session(f"hybrid-geometry-{vid}", note, block, windows, caching, gathered)
    for vid, note, block, windows, gathered in (
        ("alternating-b16-w128-l24", "GPT-OSS's and Gemma 2's alternating layers", 16, ALTERNATING, (0, 1, 22, 23)),
        ("gemma3-b16-w1024-l26", "Gemma 3's five local layers to one global", 16, GEMMA3, (13, 5)),
        ("three-groups-b32-l6", "three groups, two windows, no group's layers adjacent", 32, (64, None, 40) * 2, (0, 1, 5)),
        ("four-groups-b8-l9", "four groups, three windows, no group's layers adjacent", 8, FOUR_GROUPS, (0, 1, 3, 8)),
    )
    for caching in (False, True)
]
