"""CONTRACT.md's hybrid models (opt-in; the vectors require the capability `hybrid`): a vector a rule of
its "Hybrid models" section, each named there, plus the issue's example, the constructor's checks and
decode sessions on two or three groups. Every observation reads every group's table (`block_table C S
LAYER` by the group's first layer). The answers are the oracle's; those with prefix caching may depend
on the profile options `reuse`, `duplicates` and `freeing` (vectorgen.corpus writes a file per
value).
"""

from __future__ import annotations

from typing import Callable

from vectorgen.prefix import prompt_in, seeded_random
from vectorgen.script import Script, Vector, chunk, scripted
from vectorgen.window import decode, fork_and_decode

VECTORS: list[Vector] = []


def hybrid_vector(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A hybrid-model vector: id `hybrid-{vid}`, flagged hybrid, with `flags` besides."""
    return scripted(VECTORS, f"hybrid-{vid}", comment, f"hybrid {flags}".strip())


@hybrid_vector(
    "the-issue-example",
    "PagedKVCache(8, 2, 2, 1, 1, layer_windows=(None, 2)) after 8 one-token appends to each layer: the full-attention "
    "table holds 4 blocks, the windowed one at most 2 (the others -1); then, the pool emptied by a second sequence, "
    "appends that need a block are refused and change neither table",
    "out-of-blocks allocation-order",
)
def hybrid_issue_example(s: Script) -> None:
    c = s.new(8, 2, 2, 1, 1, layer_windows=(None, 2))
    c.add_seq(0)
    for t in range(8):
        for layer in (0, 1):
            c.append(0, layer, *chunk(1, 1, 1, 100 + 2 * t + layer))
        s.observe(c, [0])
    c.add_seq(1)
    c.append(1, 0, *chunk(1, 2 * c.num_free_blocks(), 1, 120))  # layer 0 of sequence 1 takes every free block
    s.observe(c, [0, 1])
    for seq, layer in ((0, 0), (1, 1), (0, 1)):  # each needs a block (layer 1 of 0: its next position opens block 4)
        s.attempt(c.append, seq, layer, *chunk(1, 1, 1, 130 + layer))
        s.observe(c, [0, 1])


@hybrid_vector(
    "tables-on-one-pool",
    "B = 2, layer_windows=(None, 3, None): layers 0 and 2 are group 0, layer 1 group 1; each append takes the lowest "
    "free blocks of the one pool for its own group's table only; a group's table covers its longest layer; "
    "block_table C S 2 is group 0's table; stats count every group's blocks",
    "layers allocation-order",
)
def hybrid_tables(s: Script) -> None:
    c = s.new(10, 2, 3, 1, 2, layer_windows=(None, 3, None))
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 3, 2, 200))  # group 0: blocks 0, 1
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 1, 2, 201))  # group 1: block 2
    c.block_table(0, 2)
    s.observe(c, [0])
    c.append(0, 2, *chunk(1, 5, 2, 202))  # layer 2 is longer than layer 0: group 0 takes block 3
    c.append(0, 1, *chunk(1, 4, 2, 203))  # group 1 at 5 positions: blocks 4, 5; block 2 is out of its window
    c.block_table(0, 2)
    s.observe(c, [0])
    c.add_seq(1)
    c.append(1, 1, *chunk(1, 2, 2, 204))  # sequence 1's group 1 table: the lowest free, the block group 1 let go
    s.observe(c, [0, 1])


@hybrid_vector(
    "capacity-one-check",
    "B = 1, layer_windows=(None, 2), a pool of 4: an append's need (new blocks and copies on write) is checked once "
    "against the one pool's free count, no group has a share; a refused append changes no group's table, no "
    "length, no holder, though it would have released a block at its end",
    "out-of-blocks copy-on-write",
)
def hybrid_capacity(s: Script) -> None:
    c = s.new(4, 1, 2, 1, 1, layer_windows=(None, 2))
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 2, 1, 300))  # group 0: blocks 0, 1; 2 free
    s.attempt(c.append, 0, 1, *chunk(1, 3, 1, 301))  # group 1 needs 3 blocks, 2 free: refused, nothing changes
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 2, 1, 302))  # 2 blocks, 2 free: taken; its first released at its end
    s.observe(c, [0])
    c.fork(0, 1)  # the child holds both groups' blocks
    c.append(1, 1, *chunk(1, 1, 1, 303))  # one new block, the last free one
    s.observe(c, [0, 1])
    s.attempt(c.append, 1, 0, *chunk(1, 1, 1, 304))  # group 0 needs a block, none is free: refused
    s.attempt(c.append, 0, 1, *chunk(1, 1, 1, 305))
    s.observe(c, [0, 1])
    c.free(1)
    c.append(0, 0, *chunk(1, 1, 1, 306))
    s.observe(c, [0])


@hybrid_vector(
    "release-per-group",
    "B = 1, layer_windows=(None, 2, 3): three groups; each window group releases at the end of an append to one of "
    "its layers, by its own window and its own shortest layer; an append to another group's layer releases nothing "
    "of it; the full-attention group never releases",
    "layers allocation-order",
)
def hybrid_release(s: Script) -> None:
    c = s.new(16, 1, 3, 1, 1, layer_windows=(None, 2, 3))
    c.add_seq(0)
    for layer in (1, 2):
        c.append(0, layer, *chunk(1, 4, 1, 400 + layer))  # group 1 keeps 1 block, group 2 keeps 2
        s.observe(c, [0])
    c.append(0, 0, *chunk(1, 6, 1, 403))  # group 0 takes 6 blocks and keeps them all; groups 1 and 2 unchanged
    s.observe(c, [0])
    decode(s, c, 0, 3, 3, 410)


@hybrid_vector(
    "fork-and-free-per-group",
    "B = 2, layer_windows=(None, 3): a child gets every group's table (-1 entries too) and a holder on each block; a "
    "write into a shared block copies it in its group only; free lets go of every group's table, and with prefix "
    "caching the blocks become cached in the order of the profile's `freeing` (by group: group 0's table tail "
    "first, then group 1's), which decides what pressure evicts first",
    "copy-on-write prefix-caching allocation-order",
)
def hybrid_fork_free(s: Script) -> None:
    c = s.new(14, 2, 2, 1, 1, prefix_caching=True, layer_windows=(None, 3))
    prompt_in(s, c, 0, [1, 2, 3, 4, 5, 6, 7], 2, 500, dims=1)  # group 0: 4 blocks; group 1: 4, its first 2 released
    c.fork(0, 1)
    s.observe(c, [0, 1])
    c.extend(1, [8])
    for layer in (0, 1):  # the child's position 7 is in the shared last block of each group: copied
        c.append(1, layer, *chunk(1, 1, 1, 510 + layer))
    s.observe(c, [0, 1])
    c.free(1)
    s.observe(c, [0])
    c.free(0)
    c.stats()
    for n in range(4):  # prompts of other tokens: the free blocks, then the cached ones in the order they became cached
        prompt_in(s, c, 10 + n, [9, 9, 9, 9, 9], 2, 520 + 10 * n, dims=1)
    prompt_in(s, c, 20, [1, 2, 3, 4, 5, 6, 7], 2, 570, dims=1)  # what is served depends on what was evicted


@hybrid_vector(
    "keys-per-group",
    "B = 2, layer_windows=(None, 16), prefix caching: a block is registered in its group when every layer of that "
    "group has filled it; the same prompt registers a block in each group, and a key of one group never serves "
    "another: with only group 0's keys nothing is served",
    "prefix-caching allocation-order",
)
def hybrid_keys(s: Script) -> None:
    c = s.new(12, 2, 2, 1, 1, prefix_caching=True, layer_windows=(None, 16))
    c.add_seq(0, [1, 2, 3, 4, 5])
    c.append(0, 0, *chunk(1, 5, 1, 600))  # group 0 registers [1, 2] and [1..4]; group 1 nothing
    s.observe(c, [0])
    c.add_seq(1, [1, 2, 3, 4, 5])  # group 1 serves 0 blocks: nothing served
    s.observe(c, [0, 1])
    c.append(0, 1, *chunk(1, 3, 1, 601))  # group 1 registers [1, 2]
    c.add_seq(2, [1, 2, 3, 4, 5])  # 2 served: the one block both groups have
    s.observe(c, [0, 1, 2])
    c.append(0, 1, *chunk(1, 2, 1, 602))
    c.add_seq(3, [1, 2, 3, 4, 5])  # 4 served
    s.observe(c, [0, 1, 2, 3])


@hybrid_vector(
    "hit-at-the-fixed-point",
    "B = 1, layer_windows=(None, 3, 2), prefix caching: add_seq serves the largest k every group can serve (full "
    "attention every key up to k, a window its last `need` keys), found as vLLM's fixed point; each group's table is "
    "filled for that same k (a window: k - need entries of -1, then its blocks); every layer's length is k",
    "prefix-caching allocation-order",
)
def hybrid_fixed_point(s: Script) -> None:
    c = s.new(24, 1, 3, 1, 1, prefix_caching=True, layer_windows=(None, 3, 2))
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    c.add_seq(0, prompt)
    for layer, n in ((0, 8), (1, 5), (2, 7)):  # group 0 keys 1..8, group 1 keys 1..5, group 2 keys 1..7
        c.append(0, layer, *chunk(1, n, 1, 700 + layer))
    s.observe(c, [0])
    c.add_seq(1, prompt + [9])  # group 1 (need 2) serves at most 5, keys 4 and 5; group 2 (need 1) key 5: 5 served
    c.add_seq(2, [1, 2, 3, 4, 9])  # k_max = 4: every group serves 4
    c.add_seq(3, [1, 2, 9])  # k_max = 2 <= need: the whole run from block 0
    s.observe(c, [0, 1, 2, 3])
    c.free(0)
    prompt_in(s, c, 4, [5] * 12, 3, 720, dims=1)  # pressure: the free blocks, then the oldest cached evicted
    c.add_seq(5, prompt + [9])  # served what the keys left can serve in every group
    s.observe(c, [1, 2, 3, 4, 5])


@hybrid_vector(
    "fixed-point-narrowed-in-turn",
    "B = 1, layer_windows=(3, 2), prefix caching, two window groups: group 0 keys 1..6, group 1 keys 1..9 less the "
    "two pressure evicted (5 and 6); a prompt of 10 tokens is narrowed to 6 by group 0, then to 4 by group 1, and "
    "the fixed point asks group 0 again at 4: it serves keys 3 and 4 (2 entries of -1), not its hit at 6 cut short",
    "prefix-caching allocation-order",
)
def hybrid_narrowed_in_turn(s: Script) -> None:
    c = s.new(20, 1, 2, 1, 1, prefix_caching=True, layer_windows=(3, 2))
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    c.add_seq(0, prompt)
    c.append(0, 1, *chunk(1, 7, 1, 1100))  # group 1 releases entries 5 .. 0 in that order: 5 and 4 cached first
    c.append(0, 1, *chunk(1, 2, 1, 1101))
    c.append(0, 0, *chunk(1, 6, 1, 1102))  # group 0 registers keys 1..6
    s.observe(c, [0])
    pressure = c.stats()["free"] + 2  # the free blocks, then the two oldest cached: group 1's entries 5 and 4
    c.add_seq(1, [20] * pressure)
    c.append(1, 1, *chunk(1, pressure, 1, 1103))
    s.observe(c, [0, 1])
    c.add_seq(2, prompt + [10])
    s.observe(c, [0, 1, 2])


@hybrid_vector(
    "eviction-order-across-groups",
    "B = 1, layer_windows=(None, 2), prefix caching: one eviction order for the whole pool, the order blocks became "
    "cached whatever their group: window blocks released (and cached) during decoding go before the full-attention "
    "blocks the free makes cached",
    "prefix-caching allocation-order",
)
def hybrid_eviction(s: Script) -> None:
    c = s.new(12, 1, 2, 1, 1, prefix_caching=True, layer_windows=(None, 2))
    prompt_in(s, c, 0, [1, 2, 3, 4, 5], 2, 800, dims=1)  # group 1 releases blocks 0..3 of its table as it goes: cached
    c.free(0)  # then group 0's five, tail first, then group 1's last
    c.stats()
    for n in range(4):
        prompt_in(s, c, 10 + n, [9, 9, 9], 2, 810 + 10 * n, dims=1)
        c.stats()
    prompt_in(s, c, 20, [1, 2, 3, 4, 5, 6], 2, 860, dims=1)


@hybrid_vector(
    "group-of-layers-apart",
    "B = 1, layer_windows=(2, None, 2): layers 0 and 2 are one group with full attention between them; the group "
    "releases by the shorter of its own two layers, whatever the length of layer 1 (still empty, then behind, then "
    "ahead); block_table C S 2 is block_table C S 0",
    "layers allocation-order",
)
def hybrid_layers_apart(s: Script) -> None:
    c = s.new(16, 1, 3, 1, 1, layer_windows=(2, None, 2))
    c.add_seq(0)
    for n, (layer, tokens) in enumerate(((0, 5), (2, 4), (2, 2), (1, 2), (0, 1), (1, 6))):
        c.append(0, layer, *chunk(1, tokens, 1, 950 + n))
        c.block_table(0, 2)
        s.observe(c, [0])


@hybrid_vector(
    "free-order-three-groups",
    "B = 2, layer_windows=(None, 16, 32), prefix caching: free lets go of group 0's table, then group 1's, then group "
    "2's, each tail first, so the blocks become cached in that order; one-block prompts of other tokens then take the "
    "free blocks and evict the cached ones in that order (their tables show which), and the prompt again is served "
    "what is left in every group",
    "prefix-caching allocation-order",
)
def hybrid_free_order(s: Script) -> None:
    c = s.new(14, 2, 3, 1, 1, prefix_caching=True, layer_windows=(None, 16, 32))
    prompt_in(s, c, 0, [1, 2, 3, 4, 5, 6, 7], 3, 1000, dims=1)  # 4 blocks a group, 3 of them full
    c.free(0)
    c.stats()
    for n in range(4):
        prompt_in(s, c, 10 + n, [20 + n] * 3, 3, 1010 + 10 * n, dims=1)
    prompt_in(s, c, 20, [1, 2, 3, 4, 5, 6, 7], 3, 1060, dims=1)


@hybrid_vector(
    "each-layer-its-own-window",
    "B = 2, two heads and dims, layer_windows=(5, None, 2): stats() counts every group's blocks of the one pool, "
    "seq_len is each layer's length, gather each layer's own window (every position for full attention)",
    "layers",
)
def hybrid_per_layer(s: Script) -> None:
    c = s.new(16, 2, 3, 2, 2, layer_windows=(5, None, 2))
    c.add_seq(0)
    for n, (layer, tokens) in enumerate(((0, 7), (1, 3), (2, 6), (1, 4), (0, 1), (2, 2))):
        c.append(0, layer, *chunk(2, tokens, 2, 900 + n))
        s.observe(c, [0])


@hybrid_vector(
    "bad-windows",
    "layer_windows of another length than L, an entry below 2 or above 2^31 - 1, or given with sliding_window: "
    "invalid_argument; an entry neither a decimal integer nor `none` is malformed: err protocol",
    "error-table protocol",
)
def hybrid_bad_windows(s: Script) -> None:
    for windows in ((None,), (None, 2, 2), (None, 1), (0, None), (None, 2**31), (-1, None)):
        s.attempt(lambda: s.new(4, 2, 2, 1, 1, layer_windows=windows))
    s.attempt(lambda: s.new(4, 2, 2, 1, 1, sliding_window=3, layer_windows=(None, 3)))
    s.attempt(lambda: s.new(0, 2, 2, 1, 1, layer_windows=(None, 1)))  # a size below 1 first
    for bad in ("none,x", "None,2", "", "none,,2", "+2,2", "none,2.0"):
        s.raw(f"new 4 2 2 1 1 layer_windows={bad}")
    c = s.new(4, 2, 2, 1, 1, layer_windows=(2**31 - 1, None))
    c.add_seq(0)
    s.attempt(c.block_table, 0, 2)  # a layer past L: invalid_argument
    s.attempt(c.block_table, 1, 0)  # an unknown sequence
    s.observe(c, [0])


def session(block: int, windows: tuple[int | None, ...], caching: bool) -> Vector:
    """A decode session on B = block, layers of `windows`: a shared prompt, a fork, decode steps layer by layer, a
    second prompt, frees; every observable after each step."""
    spelled = "-".join("F" if w is None else str(w) for w in windows)
    vid = f"hybrid-B{block}-{spelled}" + ("-prefix" if caching else "")
    comment = f"B = {block}, layer_windows={windows}" + (", prefix caching" if caching else "") + \
        ": a prompt, a fork, decode steps layer by layer, a second prompt, frees; every observable after each step"
    flags = "hybrid layers copy-on-write" + (" prefix-caching" if caching else "")
    layers = len(windows)

    def make() -> Script:
        s = Script(vid, comment, flags)
        c = s.new(24, block, layers, 1, 1, prefix_caching=caching, layer_windows=windows)
        prompt = [1 + i % 3 for i in range(3 * block + 1)]
        fork_and_decode(s, c, vid, prompt, layers, third_decodes=False)
        return s

    make.__name__ = vid.replace("-", "_")
    return make


VECTORS += [
    session(b, w, caching)
    for b, w in ((1, (None, 2)), (2, (None, 3)), (2, (4, None, 2)))
    for caching in (False, True)
]


def hybrid_random(seed: int, windows: tuple[int | None, ...]) -> Vector:
    """Seeded random prompts over 3 tokens, decode steps, forks and frees on two groups."""
    return seeded_random(
        f"hybrid-random-{seed}", f"seeded random prompts over 3 tokens, decode steps, forks and frees, layer_windows={windows} (seed {seed})",
        "hybrid prefix-caching random out-of-blocks copy-on-write", seed, ["prompt", "prompt", "decode", "decode", "fork", "free"], 8,
        layer_windows=windows,
    )


VECTORS += [hybrid_random(seed, windows) for seed, windows in ((1, (None, 2)), (2, (3, None)))]
