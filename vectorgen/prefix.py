"""CONTRACT.md's prefix caching (opt-in; the vectors require the capability): hits, keys over the
whole prefix, registration when every layer is full, release and eviction order, the declared
tokens, their errors and precedence, and seeded random sessions. Their answers may depend on the
profile options `reuse` and `duplicates` (vectorgen.corpus writes a file per value).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from oracle.as_impl import OutOfBlocks
from vectorgen.script import Script, Vector, chunk, scripted

VECTORS: list[Vector] = []


def prefix_vector(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A prefix-caching vector: id `prefix-{vid}`, flagged prefix-caching, with `flags` besides."""
    return scripted(VECTORS, f"prefix-{vid}", comment, f"prefix-caching {flags}".strip())


def prompt_in(s: Script, c: Any, seq: int, prompt: list[int], layers: int, seed: int, heads: int = 1, dims: int = 2) -> None:
    """add_seq with the prompt, then append what was not served, every layer (as far as the pool allows),
    and look at everything."""
    hits = c.add_seq(seq, prompt)
    try:
        for layer in range(layers):
            if len(prompt) > hits:
                c.append(seq, layer, *chunk(heads, len(prompt) - hits, dims, seed + layer))
    except OutOfBlocks:
        pass
    s.observe(c, [seq])


@prefix_vector("hit-release-evict", "B = 2, two layers: a prompt's full blocks are served to the same prompt, released tail first, and the oldest cached is evicted", "allocation-order")
def prefix_hit_release_evict(s: Script) -> None:
    c = s.new(6, 2, 2, 1, 2, prefix_caching=True)
    prompt_in(s, c, 0, [7, 8, 9, 10, 11], 2, 300)
    prompt_in(s, c, 1, [7, 8, 9, 10, 11], 2, 310)  # 4 positions served: blocks 0 and 1
    prompt_in(s, c, 2, [7, 8, 9, 10], 2, 320)  # the last prompt token is never served: 2
    c.add_seq(3, [1, 7, 8, 9, 10])  # the same tokens after another prefix: another key, nothing served
    for seq in (1, 2, 3, 0):
        c.free(seq)
        c.stats()
    prompt_in(s, c, 4, list(range(20, 30)), 2, 330)  # the 4 free blocks, then the oldest cached (block 1) evicted
    prompt_in(s, c, 5, [7, 8, 9, 10, 11], 2, 340)  # [7, 8] still cached: 2 served; the rest runs out
    s.observe(c, [4, 5])


@prefix_vector(
    "key-is-the-whole-prefix",
    "a block's key is every token up to its end: the same block of tokens after another prefix is not a hit, "
    "nor at the start of a prompt (a key over the block alone would serve both)",
)
def prefix_whole_prefix(s: Script) -> None:
    c = s.new(16, 2, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 3, 4, 5], 1, 400, dims=1)
    prompt_in(s, c, 1, [9, 2, 3, 4, 5], 1, 410, dims=1)
    prompt_in(s, c, 2, [1, 2, 9, 4, 5], 1, 420, dims=1)
    prompt_in(s, c, 3, [1, 2, 3, 4, 6], 1, 430, dims=1)
    prompt_in(s, c, 4, [3, 4, 7], 1, 440, dims=1)  # [3, 4] is registered only after [1, 2] (and [9, 2])
    prompt_in(s, c, 5, [9, 9, 3, 4, 7], 1, 450, dims=1)  # after a prefix never seen


@prefix_vector("registered-when-every-layer-is-full", "a block is registered when its last layer fills it, not before", "layers")
def prefix_every_layer(s: Script) -> None:
    c = s.new(8, 2, 3, 1, 1, prefix_caching=True)
    c.add_seq(0, [5, 6, 7])
    c.append(0, 0, *chunk(1, 3, 1, 500))
    c.append(0, 1, *chunk(1, 2, 1, 501))
    c.add_seq(1, [5, 6, 7])  # layer 2 has not filled block 0: nothing to serve
    c.append(0, 2, *chunk(1, 2, 1, 502))
    c.add_seq(2, [5, 6, 7])  # now it has: 2 served
    s.observe(c, [0, 1, 2])


@prefix_vector("hit-takes-a-holder", "a served block gains a holder: freeing the sequence that wrote it leaves it used, not cached", "copy-on-write")
def prefix_hit_holder(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 2, prefix_caching=True)
    prompt_in(s, c, 0, [3, 3, 3, 3, 3], 1, 600)
    c.add_seq(1, [3, 3, 3, 3, 3, 4])
    c.free(0)
    s.observe(c, [1])
    c.append(1, 0, *chunk(1, 2, 2, 601))
    s.observe(c, [1])
    c.fork(1, 2)
    c.free(1)
    c.free(2)
    s.observe(c, [])


@prefix_vector("evicted-key-is-gone", "an evicted block's key goes with it: the block is reused, and its old prompt is no longer served", "allocation-order")
def prefix_evicted_key(s: Script) -> None:
    c = s.new(3, 2, 1, 1, 2, prefix_caching=True)
    prompt_in(s, c, 0, [1, 1, 2], 1, 700)
    c.free(0)  # block 0 cached under [1, 1]; block 1 free
    prompt_in(s, c, 1, [4, 4, 5, 5, 6], 1, 710)  # blocks 1, 2, then block 0 evicted
    c.add_seq(2, [1, 1, 2])  # [1, 1] was evicted: nothing served
    s.observe(c, [1, 2])
    c.free(1)
    c.free(2)
    c.stats()


@prefix_vector("release-order-and-hits", "free lets go of the table tail first; a hit takes a cached block out of the eviction order and its next release puts it last", "allocation-order")
def prefix_release_order(s: Script) -> None:
    c = s.new(6, 1, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 3, 4], 1, 800, dims=1)  # blocks 0..3; 0, 1, 2 full and registered ([1,2,3,4] too)
    c.free(0)  # cached, oldest first: 3, 2, 1, 0
    c.add_seq(1, [1, 2])  # serves block 0 ([1]); the eviction order is now 3, 2, 1
    s.observe(c, [1])  # block 0 is used, not cached
    c.free(1)  # block 0 cached again, last: 3, 2, 1, 0
    for seq, n in ((2, 3), (3, 3)):  # 2 free blocks, then the oldest cached ones, one by one
        prompt_in(s, c, seq, [9 + seq * 10 + i for i in range(n)], 1, 810 + seq, dims=1)
        c.stats()
    c.add_seq(4, [1, 2])  # [1] is the last cached one standing: served
    s.observe(c, [2, 3, 4])


@prefix_vector("key-evicted-under-a-live-sequence", "a sequence computed a block whose key another block held; that key is evicted, then the sequence's next block is registered under the whole prefix all the same, and served once the first key is registered again", "allocation-order")
def prefix_evicted_under_a_live_sequence(s: Script) -> None:
    c = s.new(4, 2, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 9], 1, 1200, dims=1)  # block 0 registered under [1, 2]
    c.free(0)  # block 0 cached, block 1 free
    prompt_in(s, c, 1, [1, 2], 1, 1210, dims=1)  # the last token is computed: nothing served; its block stays unregistered
    prompt_in(s, c, 2, [5, 6, 7, 8, 9], 1, 1220, dims=1)  # three blocks: the two free ones, then block 0 evicted
    c.free(2)  # its full blocks cached, its last block (0) free
    c.extend(1, [3, 4])
    c.append(1, 0, *chunk(1, 2, 1, 1230))  # block 1 of sequence 1: key [1, 2, 3, 4], registered though [1, 2] is not
    c.add_seq(3, [1, 2, 3, 4, 5])  # [1, 2] is not registered: nothing served
    c.free(3)
    prompt_in(s, c, 4, [1, 2, 7], 1, 1240, dims=1)  # evicts the two cached blocks; registers [1, 2] again
    c.add_seq(5, [1, 2, 3, 4, 5])  # now [1, 2] and [1, 2, 3, 4] are both registered: 4 served
    s.observe(c, [1, 4, 5])


@prefix_vector("keys-evicted-deep-under-a-live-sequence", "as above, two blocks deep: the sequence was served [1, 2], computed [1, 2, 3, 4] (registered on another block, later evicted), and its next block's key is the whole prefix [1, 2, 3, 4, 5, 6]", "allocation-order")
def prefix_evicted_deep(s: Script) -> None:
    c = s.new(6, 2, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 3, 4, 9], 1, 1300, dims=1)  # blocks 0 [1, 2], 1 [1, 2, 3, 4], 2
    c.free(0)  # cached: 1, then 0
    prompt_in(s, c, 1, [1, 2, 3, 4], 1, 1310, dims=1)  # served block 0; computes [1, 2, 3, 4] on block 2, unregistered
    prompt_in(s, c, 2, list(range(20, 27)), 1, 1320, dims=1)  # blocks 3, 4, 5, then block 1 evicted
    c.free(2)
    c.extend(1, [5, 6])
    c.append(1, 0, *chunk(1, 2, 1, 1330))  # registered under [1, 2, 3, 4, 5, 6]
    prompt_in(s, c, 3, [1, 2, 3, 4, 8], 1, 1340, dims=1)  # registers [1, 2, 3, 4] again
    c.add_seq(4, [1, 2, 3, 4, 5, 6, 7])  # all three keys registered: 6 served
    s.observe(c, [1, 3, 4])


@prefix_vector("parent-key-evicted-child-kept", "a key whose block is evicted while a longer key under it stays registered (another sequence computed the same first block, then the next): the shorter key goes, the longer stays, but nothing is served without the first", "allocation-order")
def prefix_parent_evicted(s: Script) -> None:
    c = s.new(4, 2, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 9], 1, 1400, dims=1)  # block 0 registered under [1, 2]
    c.free(0)  # block 0 cached, block 1 free
    prompt_in(s, c, 1, [1, 2], 1, 1410, dims=1)  # computes [1, 2] on block 1, unregistered
    c.extend(1, [3, 4])
    c.append(1, 0, *chunk(1, 2, 1, 1420))  # block 2 registered under [1, 2, 3, 4]
    prompt_in(s, c, 2, [7, 8, 9], 1, 1430, dims=1)  # block 3, then block 0 evicted: [1, 2] goes, [1, 2, 3, 4] stays
    c.add_seq(3, [1, 2, 3, 4, 5])  # nothing served: the run must start at [1, 2]
    s.observe(c, [1, 2, 3])


@prefix_vector("out-of-blocks-counts-cached", "an append may take free and cached blocks; one more than both runs out, nothing changed", "out-of-blocks")
def prefix_out_of_blocks(s: Script) -> None:
    c = s.new(4, 2, 1, 1, 1, prefix_caching=True)
    prompt_in(s, c, 0, [1, 2, 3, 4], 1, 900, dims=1)
    c.free(0)  # 2 cached, 2 free
    c.add_seq(1, list(range(20, 31)))
    s.attempt(c.append, 1, 0, *chunk(1, 9, 1, 901))  # 5 blocks: one more than free + cached
    s.observe(c, [1])
    c.append(1, 0, *chunk(1, 8, 1, 902))  # 4 blocks: both cached ones evicted
    s.observe(c, [1])


@prefix_vector("declared-tokens", "with the option on, an append must not run past the declared tokens (add_seq's and extend's)", "error-table")
def prefix_declared(s: Script) -> None:
    c = s.new(4, 2, 2, 1, 1, prefix_caching=True)
    c.add_seq(0, [1, 2])
    s.attempt(c.append, 0, 0, *chunk(1, 3, 1, 1000))
    c.append(0, 0, *chunk(1, 2, 1, 1001))
    s.attempt(c.append, 0, 0, *chunk(1, 1, 1, 1002))
    c.extend(0, [3])
    c.append(0, 0, *chunk(1, 1, 1, 1003))
    c.append(0, 1, *chunk(1, 3, 1, 1004))
    c.add_seq(1)  # no tokens declared: no append fits
    s.attempt(c.append, 1, 0, *chunk(1, 1, 1, 1005))
    s.observe(c, [0, 1])


@prefix_vector("bad-tokens", "negative token ids, extend of a sequence that is not live, add_seq of a live id: refused, nothing changed", "error-table")
def prefix_bad_tokens(s: Script) -> None:
    for caching in (True, False):
        c = s.new(4, 2, 1, 1, 1, prefix_caching=caching)
        c.add_seq(0, [1, 2, 3])
        s.attempt(c.extend, 0, [4, -1])
        s.attempt(c.add_seq, 1, [0, -3])
        s.attempt(c.extend, 7, [1])
        s.attempt(c.add_seq, 0, [1])
        c.extend(0, [4])
        c.add_seq(1, [1, 2, 3])
        s.observe(c, [0, 1])


@prefix_vector(
    "precedence",
    "several faults in one call: an unknown id before negative tokens or a run past the declared tokens; a live id before bad tokens; "
    "the declared tokens before capacity; closed before everything",
    "error-precedence error-table out-of-blocks",
)
def prefix_precedence(s: Script) -> None:
    for caching in (True, False):
        c = s.new(3, 2, 2, 1, 1, prefix_caching=caching)
        c.add_seq(0, [1, 2, 3])
        c.append(0, 0, *chunk(1, 2, 1, 1300))
        c.add_seq(1, [1, 2, 3])
        c.free(1)
        for call, args in ((c.extend, (99, [-1])), (c.extend, (1, [4, -1])), (c.add_seq, (0, [-1])), (c.add_seq, (0, [1, -2])),
                           (c.fork, (99, 0)), (c.append, (99, 0, *chunk(1, 7, 1, 1301))), (c.append, (1, 5, *chunk(1, 7, 1, 1302))),
                           (c.append, (0, 2, *chunk(1, 7, 1, 1303))), (c.append, (0, 0, *chunk(1, 7, 1, 1304)))):
            s.attempt(call, *args)  # on, the last is past the declared tokens (3) and needs 4 more blocks: declared wins
            s.observe(c, [0])
        c.extend(0, [4, 5, 6, 7, 8, 9])
        s.attempt(c.append, 0, 0, *chunk(1, 7, 1, 1305))  # declared now: out of blocks
        s.observe(c, [0])
        c.close()
        for call, args in ((c.extend, (99, [-1])), (c.add_seq, (5, [-1])), (c.add_seq, (0, [1]))):
            s.attempt(call, *args)


@prefix_vector("token-ids-past-16-bits", "token ids that agree in their low 16 or 32 bits are different tokens: a prompt is served only to a prompt with the same ids, up to 2^63 - 1", "integer-range")
def prefix_wide_token_ids(s: Script) -> None:
    c = s.new(12, 2, 1, 1, 1, prefix_caching=True)
    top = 2**63 - 1
    prompt_in(s, c, 0, [(1 << 16) + 1, (1 << 16) + 2, 5], 1, 1200, dims=1)
    prompt_in(s, c, 1, [1, 2, 5], 1, 1210, dims=1)  # the same low 16 bits: not served
    prompt_in(s, c, 2, [(1 << 32) + 1, (1 << 32) + 2, 5], 1, 1220, dims=1)  # the same low 16 and 32 bits as 1's
    prompt_in(s, c, 3, [top, top - 1, 5], 1, 1230, dims=1)
    prompt_in(s, c, 4, [(1 << 16) + 1, (1 << 16) + 2, 6], 1, 1240, dims=1)  # served: 2
    prompt_in(s, c, 5, [top, top - 1, 6], 1, 1250, dims=1)  # served: 2


@prefix_vector("off-serves-nothing", "with the option off, add_seq serves nothing and extend declares nothing: no declared-token limit, no cached blocks")
def prefix_off(s: Script) -> None:
    c = s.new(4, 2, 1, 1, 1)
    prompt_in(s, c, 0, [1, 2, 3], 1, 1100, dims=1)
    c.free(0)
    prompt_in(s, c, 1, [1, 2, 3], 1, 1110, dims=1)
    c.extend(1, [4])
    c.append(1, 0, *chunk(1, 3, 1, 1111))
    s.observe(c, [1])


def random_session(s: Script, c: Any, seed: int, ops: list[str], longest_tail: int) -> None:
    """60 seeded random requests on cache c (2 layers, B = 2, D = 1, 8 blocks, prefix caching): prompts
    over 3 tokens that share a prefix of an earlier one then add up to `longest_tail - 1` tokens, decode
    steps, forks and frees, drawn from `ops`; each observed after it. Refusals are the vectors' answers."""
    rng = np.random.default_rng(seed)
    layers = 2
    live: list[int] = []
    prompts: list[list[int]] = [[]]
    for n in range(60):
        op = rng.choice(ops) if live else "prompt"
        if op in ("prompt", "fork") and len(live) >= 4:
            op = "free"
        try:
            if op == "prompt":
                base = prompts[int(rng.integers(len(prompts)))]
                prompt = base[: int(rng.integers(len(base) + 1))] + [int(t) for t in rng.integers(0, 3, int(rng.integers(0, longest_tail)))]
                prompts.append(prompt)
                live.append(100 + n)
                prompt_in(s, c, 100 + n, prompt, layers, seed * 1000 + n, dims=1)
            elif op == "decode":
                seq = live[int(rng.integers(len(live)))]
                c.extend(seq, [int(rng.integers(3))])
                for layer in range(layers):
                    c.append(seq, layer, *chunk(1, 1, 1, seed * 1000 + n + layer))
            elif op == "fork":
                c.fork(live[int(rng.integers(len(live)))], 100 + n)
                live.append(100 + n)
            else:
                c.free(live.pop(int(rng.integers(len(live)))))
        except (OutOfBlocks, ValueError):
            pass  # out of blocks mid-prompt, or a decode step of a sequence whose prompt ran out: refused alike
        s.observe(c, live)


def seeded_random(vid: str, what: str, flags: str, seed: int, ops: list[str], longest_tail: int, **options: Any) -> Vector:
    """A vector of `random_session` on a new cache of 8 blocks, B = 2, L = 2, H = D = 1, prefix caching and
    `options` (a window, the layers' windows): the random vector of each family that has one."""

    def make() -> Script:
        s = Script(vid, what, flags)
        random_session(s, s.new(8, 2, 2, 1, 1, prefix_caching=True, **options), seed, ops, longest_tail)
        return s

    make.__name__ = vid.replace("-", "_")
    return make


def prefix_random(seed: int) -> Vector:
    """Seeded random prompts over 3 tokens, decode steps, forks and frees."""
    return seeded_random(
        f"prefix-random-{seed}", f"seeded random prompts over 3 tokens, decode steps, forks and frees (seed {seed})",
        "prefix-caching random out-of-blocks copy-on-write", seed, ["prompt", "prompt", "decode", "fork", "free"], 6,
    )


VECTORS += [prefix_random(seed) for seed in (1, 2)]
