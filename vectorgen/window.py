"""CONTRACT.md's sliding window (opt-in; the vectors require the capability): gather returns the
window, blocks that no layer's window reaches released at the end of each append (-1 in the table),
capacity counted before the release, fork and free across released entries; and with prefix caching,
released blocks cached, the hit taken from the right, its fallback from block 0. The answers are the
oracle's; those with prefix caching may depend on the profile options `reuse` and `duplicates`
(vectorgen.corpus writes a file per value).
"""

from __future__ import annotations

from typing import Any, Callable


from oracle.as_impl import OutOfBlocks
from vectorgen.prefix import prompt_in, seeded_random
from vectorgen.script import Script, Vector, chunk, scripted

VECTORS: list[Vector] = []


def window_vector(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A sliding-window vector: id `window-{vid}`, flagged sliding-window, with `flags` besides."""
    return scripted(VECTORS, f"window-{vid}", comment, f"sliding-window {flags}".strip())


def decode(s: Script, c: Any, seq: int, layers: int, steps: int, seed: int, heads: int = 1, dims: int = 1) -> None:
    """`steps` decode steps of one position, every layer in turn, looking at everything after each."""
    for step in range(steps):
        for layer in range(layers):
            c.append(seq, layer, *chunk(heads, 1, dims, seed + 10 * step + layer))
        s.observe(c, [seq])


@window_vector(
    "gather-returns-the-window",
    "B = 2, W = 3, two heads and dims: gather returns the last W - 1 positions bit for bit (all of them while fewer), "
    "seq_len the whole length; a block goes back once no position of it is in the window, its entry -1",
    "allocation-order",
)
def window_gather(s: Script) -> None:
    c = s.new(8, 2, 1, 2, 2, sliding_window=3)
    c.add_seq(0)
    s.observe(c, [0])  # no position: [H, 0, D]
    for n in range(6):  # block 0 goes at n = 4, block 1 at n = 6
        c.append(0, 0, *chunk(2, 1, 2, 100 + n))
        s.observe(c, [0])
    c.append(0, 0, *chunk(2, 3, 2, 110))  # positions 6..8: two new blocks (the lowest free), then the block of 4 and 5 goes
    s.observe(c, [0])


@window_vector(
    "bad-sizes",
    "W below 2 or above 2^31 - 1 is invalid_argument (a size below 1 too, before it; with prefix caching alike; "
    "a bad W before a pool of 2^63 bytes or more, which a good W leaves out_of_memory); "
    "W = 2^31 - 1 releases nothing, W = 2 keeps one position",
    "error-table",
)
def window_bad_sizes(s: Script) -> None:
    for w, caching in ((1, False), (0, False), (-1, False), (2**31, False), (2**40, False), (1, True), (-(2**63), True)):
        s.attempt(lambda: s.new(4, 2, 1, 1, 1, prefix_caching=caching, sliding_window=w))
    s.attempt(lambda: s.new(0, 2, 1, 1, 1, sliding_window=1))
    s.attempt(lambda: s.new(4, 2, 0, 1, 1, sliding_window=3))
    for w in (1, 3):  # W is checked before memory: 4 * N * B * L * H * D bytes is 2^73 here
        s.attempt(lambda: s.new(2**31 - 1, 2**32, 1, 1, 4, sliding_window=w))
    for w in (2**31 - 1, 2):
        c = s.new(4, 2, 1, 1, 1, sliding_window=w)
        c.add_seq(0)
        c.append(0, 0, *chunk(1, 5, 1, 200 + w % 7))
        s.observe(c, [0])
        c.append(0, 0, *chunk(1, 1, 1, 210 + w % 7))
        s.observe(c, [0])


@window_vector(
    "a-chunk-needs-every-block-it-touches",
    "B = 1, W = 2: an append needs a block for every position of its chunk, even those its own end puts out of the "
    "window; what it releases comes back at its end, too late for it",
    "out-of-blocks allocation-order",
)
def window_chunk_capacity(s: Script) -> None:
    c = s.new(4, 1, 1, 1, 1, sliding_window=2)
    c.add_seq(0)
    s.attempt(c.append, 0, 0, *chunk(1, 5, 1, 300))  # 5 blocks, 4 in the pool: refused, though 1 would be kept
    s.observe(c, [0])
    c.append(0, 0, *chunk(1, 4, 1, 301))  # blocks 0..3, then 0, 1, 2 released
    s.observe(c, [0])
    s.attempt(c.append, 0, 0, *chunk(1, 4, 1, 302))  # 4 blocks, 3 free: refused, though block 3 would come back at its end
    s.observe(c, [0])
    c.append(0, 0, *chunk(1, 3, 1, 303))  # blocks 0, 1, 2 for positions 4..6; at its end entries 3..5 go, block 3 and two of its own
    s.observe(c, [0])


@window_vector(
    "out-of-blocks-releases-nothing",
    "B = 1, W = 2: an append refused for want of a block changes nothing, and releases nothing either, though the "
    "append would have released a block at its end",
    "out-of-blocks",
)
def window_out_of_blocks(s: Script) -> None:
    c = s.new(2, 1, 1, 1, 1, sliding_window=2)
    for seq in (0, 1):
        c.add_seq(seq)
        c.append(seq, 0, *chunk(1, 1, 1, 400 + seq))
    s.attempt(c.append, 0, 0, *chunk(1, 1, 1, 402))  # needs a block, none free: block 0 stays in the table
    s.observe(c, [0, 1])
    c.free(1)
    c.append(0, 0, *chunk(1, 1, 1, 403))  # now it takes block 1, and block 0 goes
    s.observe(c, [0])


@window_vector(
    "a-lagging-layer-keeps-its-blocks",
    "B = 1, W = 2, two layers: a block is released only once it is before every layer's window (the shortest layer "
    "decides); each layer's gather is its own window",
    "layers",
)
def window_lagging_layer(s: Script) -> None:
    c = s.new(8, 1, 2, 1, 2, sliding_window=2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 5, 2, 500))  # layer 0 at 5, layer 1 at 0: nothing released
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 1, 2, 501))  # layer 1 at 1: still nothing
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 2, 2, 502))  # layer 1 at 3: blocks 0 and 1 go
    s.observe(c, [0])
    c.append(0, 0, *chunk(1, 2, 2, 503))  # layer 0 at 7, the table grows; layer 1 still decides
    s.observe(c, [0])
    c.append(0, 1, *chunk(1, 4, 2, 504))  # layer 1 at 7: every block but the last goes
    s.observe(c, [0])


@window_vector(
    "fork-and-free-across-released-entries",
    "B = 2, W = 3: a child gets the parent's -1 entries and holds its other blocks; a write into the shared tail "
    "copies it (copy on write), the child's release drops only its own hold; free skips -1 entries",
    "copy-on-write allocation-order",
)
def window_fork(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 2, sliding_window=3)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 5, 2, 600))  # blocks 0, 1, 2; block 0 released
    c.fork(0, 1)
    s.observe(c, [0, 1])
    c.append(1, 0, *chunk(1, 1, 2, 601))  # the child's position 5 is in shared block 2: copied; its entry 1 released
    s.observe(c, [0, 1])
    c.append(0, 0, *chunk(1, 1, 2, 602))  # the parent writes block 2 in place; block 1 has no holder left: free
    s.observe(c, [0, 1])
    c.fork(1, 2)
    c.free(1)
    s.observe(c, [0, 2])
    c.free(0)
    c.free(2)
    s.observe(c, [])


@window_vector(
    "released-blocks-become-cached",
    "B = 2, W = 3, prefix caching: a released registered block is cached while its sequence lives; blocks released "
    "by one append become cached from the highest index to the lowest, so the highest is evicted first",
    "prefix-caching allocation-order",
)
def window_released_cached(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 1, prefix_caching=True, sliding_window=3)
    prompt_in(s, c, 0, [1, 2, 3, 4, 5, 6, 7], 1, 700, dims=1)  # blocks 0..3; blocks 1 then 0 released, cached
    prompt_in(s, c, 1, [9, 9, 9, 9, 9, 9, 9], 1, 710, dims=1)  # the two free blocks, then the cached ones, oldest (1) first
    c.add_seq(2, [1, 2, 3, 4, 5, 6, 8])  # need = 1 block: [1..6] is still registered (block 2, held): 6 served
    s.observe(c, [0, 1, 2])
    for seq in (0, 1, 2):
        c.free(seq)
        c.stats()
    prompt_in(s, c, 3, [1, 2, 3, 4, 9], 1, 720, dims=1)  # [1, 2] and [1, 2, 3, 4] went with their evicted blocks: nothing served


@window_vector(
    "hit-from-the-right",
    "B = 1, W = 3 (need = 2), prefix caching: add_seq serves the largest k whose last `need` keys are registered, "
    "the table k - need entries of -1 then those blocks; with no such k, the longest run from block 0",
    "prefix-caching",
)
def window_hit_right(s: Script) -> None:
    c = s.new(10, 1, 1, 1, 1, prefix_caching=True, sliding_window=3)
    prompt_in(s, c, 0, [1, 2, 3, 4, 5, 6], 1, 800, dims=1)  # blocks 0..5 registered; 3, 2, 1, 0 released and cached
    c.add_seq(1, [1, 2, 3, 4, 5, 6, 7])  # k = 6: keys [1..5] and [1..6] (blocks 4 and 5, held)
    c.add_seq(2, [1, 2, 3, 4, 9])  # k = 4: blocks 2 and 3, out of the cached ones
    c.add_seq(3, [1, 9])  # k_max = 1 < need: the run from block 0, [1]
    c.add_seq(4, [1, 2, 3])  # k = 2 = need: no -1 before the blocks
    c.add_seq(5, [9, 2, 3, 4, 5, 6, 7])  # another first token: no key of it, nothing served
    s.observe(c, [0, 1, 2, 3, 4, 5])
    for seq in (1, 2):  # served sequences decode on: their windows move on, releasing the served blocks again
        c.extend(seq, [7])
        c.append(seq, 0, *chunk(1, 1, 1, 810 + seq))
    s.observe(c, [1, 2])


@window_vector(
    "no-hit-with-a-key-missing-in-the-window",
    "B = 1, W = 3 (need = 2), prefix caching: a k is served only if every key of its window is registered; one evicted "
    "inside the window of the largest k makes a smaller k the answer",
    "prefix-caching allocation-order",
)
def window_missing_key(s: Script) -> None:
    c = s.new(8, 1, 1, 1, 1, prefix_caching=True, sliding_window=3)
    prompt_in(s, c, 0, [1, 2, 3, 4, 5, 6], 1, 900, dims=1)  # blocks 0..5; cached 3, 2, 1, 0 (in that order)
    prompt_in(s, c, 1, [7, 7, 7], 1, 910, dims=1)  # blocks 6, 7, then block 3 (key [1, 2, 3, 4]) evicted
    c.add_seq(2, [1, 2, 3, 4, 5, 9])  # k = 5 needs [1..4]: gone; k = 4 too; k = 3: blocks 1 and 2
    c.add_seq(3, [1, 2, 3, 4, 5, 6, 9])  # k = 6 needs [1..5] and [1..6] only: served, [1..4] missing before them
    s.observe(c, [0, 1, 2, 3])


def fork_and_decode(s: Script, c: Any, vid: str, prompt: list[int], layers: int, third_decodes: bool) -> None:
    """On cache c: `prompt` as sequence 0, a fork 1, decode steps layer by layer on both, the prompt and one more
    token as sequence 2 (with `third_decodes`, decode steps on it after 0 is freed), frees; every observable after
    each step. The session is written to fit its pool: OutOfBlocks is a bug of the vector."""
    try:
        prompt_in(s, c, 0, prompt, layers, 1000, dims=1)
        c.fork(0, 1)
        for seq in (0, 1):
            c.extend(seq, [seq] * 3)
            decode(s, c, seq, layers, 3, 1100 + 100 * seq)
        prompt_in(s, c, 2, prompt + [0], layers, 1300, dims=1)
        c.free(0)
        s.observe(c, [1, 2])
        if third_decodes:
            c.extend(2, [5, 5])
            decode(s, c, 2, layers, 2, 1400)
        c.free(1)
        c.free(2)
        s.observe(c, [])
    except OutOfBlocks:
        raise AssertionError(f"{vid}: the session was written to fit its pool") from None


def geometry(block: int, window: int, caching: bool) -> Vector:
    """A decode session on B = block, W = window, two layers: a shared prompt, a fork, decode steps layer by layer,
    frees; every observable after each step."""
    need = -(-(window - 1) // block)
    vid = f"window-B{block}-W{window}" + ("-prefix" if caching else "")
    comment = f"B = {block}, W = {window} (need = {need}), two layers" + (", prefix caching" if caching else "") + \
        ": a prompt, a fork, decode steps layer by layer, a second prompt, frees; every observable after each step"
    flags = "sliding-window layers copy-on-write" + (" prefix-caching" if caching else "")

    def make() -> Script:
        s = Script(vid, comment, flags)
        c = s.new(12, block, 2, 1, 1, prefix_caching=caching, sliding_window=window)
        prompt = [1 + i % 3 for i in range(2 * block + window)]
        fork_and_decode(s, c, vid, prompt, 2, third_decodes=True)
        return s

    make.__name__ = vid.replace("-", "_")
    return make


# W = 2 (one position kept), W > B not a multiple of B, W a multiple of B, W < B.
VECTORS += [geometry(b, w, caching) for b, w in ((1, 2), (2, 2), (3, 2), (2, 5), (3, 7), (2, 4), (4, 3)) for caching in (False, True)]


def window_random(seed: int, window: int) -> Vector:
    """Seeded random prompts over 3 tokens, decode steps, forks and frees, with a window of `window`."""
    return seeded_random(
        f"window-random-{seed}", f"seeded random prompts over 3 tokens, decode steps, forks and frees, W = {window} (seed {seed})",
        "sliding-window prefix-caching random out-of-blocks copy-on-write", seed, ["prompt", "prompt", "decode", "decode", "fork", "free"], 8,
        sliding_window=window,
    )


VECTORS += [window_random(seed, window) for seed, window in ((1, 2), (2, 3), (3, 5))]
