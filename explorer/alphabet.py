"""The explorer's alphabet: the tiny geometries it walks, every call it tries from a state (the valid
ones and the error table's bad inputs), and the values an append sends."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracle.model import ModelKVCache
from oracle.state import positions
from wire.codec import CAPABILITY, format_layer_windows

Action = tuple[Any, ...]  # ("append", seq, layer, T), ("fork", parent, child), ...


@dataclass(frozen=True)
class Geometry:
    num_blocks: int
    block_size: int
    n_layers: int
    n_kv_heads: int
    d_head: int
    prefix_caching: bool = False
    seq_ids: tuple[int, ...] = (0, 1, 2)
    vocab: int = 2  # prefix caching: token ids 0 .. vocab-1
    max_prompt: int = -1  # prefix caching: prompts of length 0 .. max_prompt (default B + 1)
    max_depth: int = 0  # walked to depth min(K, max_depth) when set (the state count grows fastest here)
    tree_depth: int = 4  # every sequence of up to min(K, this) accepted calls is walked, with no merging
    sliding_window: int | None = None  # W: the oracle and the port both made with the window (`--sliding-window`)
    layer_windows: tuple[int | None, ...] | None = None  # a hybrid model: each layer's window (None: full attention)
    quick: bool = True  # walked by the whole gate's depth-3 step too (else only by --exhaustive and the suite)

    @property
    def sizes(self) -> tuple[int, int, int, int, int]:
        return (self.num_blocks, self.block_size, self.n_layers, self.n_kv_heads, self.d_head)

    @property
    def options(self) -> dict[str, Any]:
        """The constructor's keyword options for this geometry (none by default)."""
        out: dict[str, Any] = {"prefix_caching": True} if self.prefix_caching else {}
        if self.sliding_window is not None:
            out["sliding_window"] = self.sliding_window
        if self.layer_windows is not None:
            out["layer_windows"] = self.layer_windows
        return out

    @property
    def needs(self) -> frozenset[str]:
        """The capabilities a port must announce to be walked on this geometry (its options' words; `hybrid`
        for layer_windows)."""
        return frozenset(CAPABILITY[option] for option in self.options)

    @property
    def group_layers(self) -> tuple[int, ...]:
        """The first layer of each group after group 0 (a hybrid model's other tables, `block_table(s, layer)`)."""
        windows = self.layer_windows or ()
        return tuple(windows.index(w) for w in dict.fromkeys(windows))[1:]

    @property
    def name(self) -> str:
        """A short id, `N3-B2-L2-H1-D1` (`-prefix` with prefix caching, `-W3` with a window of 3): test ids and xfail lists use it."""
        n, b, l, h, d = self.sizes
        window = f"-W{self.sliding_window}" if self.sliding_window is not None else ""
        if self.layer_windows is not None:  # -LW-F-2: layer 0 full attention, layer 1 a window of 2
            window += "-LW-" + "-".join("F" if w is None else str(w) for w in self.layer_windows)
        return f"N{n}-B{b}-L{l}-H{h}-D{d}" + ("-prefix" if self.prefix_caching else "") + window

    def __str__(self) -> str:
        n, b, l, h, d = self.sizes
        spelled = {k: format_layer_windows(v) if k == "layer_windows" else v for k, v in self.options.items()}
        options = "".join(f" {k}" if v is True else f" {k}={v}" for k, v in spelled.items())
        return f"N={n} B={b} L={l} H={h} D={d}{options} ids {','.join(map(str, self.seq_ids))}"

    def depth(self, k: int) -> int:
        """How deep a walk asked for depth k goes (every model state within it, through one path each)."""
        return min(k, self.max_depth) if self.max_depth else k

    def tree(self, k: int, tree_depth: int | None = None) -> int:
        """Up to how many calls every sequence of accepted calls is walked (`tree_depth` overrides the geometry's)."""
        return min(self.depth(k), self.tree_depth if tree_depth is None else tree_depth)

    def prompts(self) -> list[tuple[int, ...]]:
        top = self.block_size + 1 if self.max_prompt < 0 else self.max_prompt
        return [p for n in range(top + 1) for p in itertools.product(range(self.vocab), repeat=n)]


# The geometries `ci/gate --exhaustive` walks: the (N=3, B=2, L=2, H=D=1, 3 sequence ids);
# two heads and two dims, so a head or a dimension in the wrong place shows; a block size that is not
# a power of two (B=3), so that `p & (B-1)` for `p % B` or a shift for `// B` shows; and prefix caching
# with one-position blocks on a pool of two, so that keys, hits, release order and eviction come within
# a few calls: one layer to depth K, two layers (a block full in one layer only) to depth min(K, 5);
# and a pool of three with prompts of up to three tokens of one id, so that a prompt can hit two blocks
# whose ids are not neighbours (a hit on [0] then a block taken after another sequence's). The prefix
# geometries branch most (a prompt per add_seq): every sequence of up to 3 calls is walked there, 4 on
# the others (docs/EXHAUSTIVE.md has the cost of each).
GEOMETRIES: tuple[Geometry, ...] = (
    Geometry(3, 2, 2, 1, 1),
    Geometry(2, 2, 1, 2, 2, seq_ids=(0, 1)),
    Geometry(3, 3, 1, 1, 1, seq_ids=(0, 1)),
    Geometry(2, 1, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1), tree_depth=3),
    Geometry(2, 1, 2, 1, 1, prefix_caching=True, seq_ids=(0, 1), max_depth=5, tree_depth=3),
    Geometry(3, 1, 1, 1, 1, prefix_caching=True, vocab=1, max_prompt=3, tree_depth=3),
)
# The sliding window's geometries (CONTRACT.md "Sliding window (opt-in)"), walked whenever the port
# announces `sliding_window`: W = 2 and 3 on blocks of 1, 2 and 3, so that W <= B and W > B both occur.
# Two layers of B = 2 with W = 2: an append of B + 1 positions to either layer puts a block behind the
# shortest layer's window (a release after an append to the last layer only fails in 3 calls). With
# prefix caching, prompts of up to 5 tokens of one id: released blocks cached, a hit from the right
# (k - need entries of -1), its fallback from block 0 once an early key is evicted, and a block that
# fills after an earlier entry was released, which only W <= B allows before the next block fills.
# The gate's depth-3 step walks the first six (W = 2 and 3, B = 1, 2 and 3, W <= B and W > B, with and
# without prefix caching), which find each window bug of mutants/window_ports in 3 calls; the last
# three, which cost as much again, only --exhaustive and the suite walk.
WINDOW_GEOMETRIES: tuple[Geometry, ...] = (
    Geometry(3, 2, 2, 1, 1, max_depth=5, sliding_window=2),
    Geometry(3, 1, 1, 1, 1, seq_ids=(0, 1), sliding_window=3),
    Geometry(3, 3, 1, 1, 1, seq_ids=(0, 1), sliding_window=2),
    Geometry(2, 2, 1, 2, 2, seq_ids=(0, 1), sliding_window=3),
    Geometry(2, 1, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=5, tree_depth=3, sliding_window=2),
    Geometry(3, 2, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=5, tree_depth=3, sliding_window=2),
    Geometry(3, 1, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=5, tree_depth=3, sliding_window=3, quick=False),
    Geometry(3, 3, 1, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=7, max_depth=5, tree_depth=3, sliding_window=3, quick=False),
    Geometry(2, 1, 2, 1, 1, prefix_caching=True, seq_ids=(0, 1), max_depth=5, tree_depth=3, sliding_window=2, quick=False),
)
# Hybrid models' geometries (CONTRACT.md "Hybrid models (opt-in)"), walked whenever the port announces
# `hybrid`: two layers, a full-attention layer and a window of 2, so that there are two groups on one
# tiny pool; blocks of 1 and 2. With B = 1 the window group lets a block go at its second append while
# the full-attention group keeps every block, so a release in the wrong group, a capacity checked per
# group and a refusal that changes one group show within 3 calls; with prefix caching, prompts of up to
# 4 tokens of one id: keys per group, a hit cut to what both groups serve (the fixed point: a prompt a
# sequence wrote in one layer only), and the order a free gives blocks back across groups (which
# pressure then evicts). Three layers: a group whose layers have full attention between them, (2, None, 2), which
# releases by its own layers whatever the one between holds; and three groups, (None, 2, 3), each releasing by its
# own window. The gate's depth-3 step walks the first two; --exhaustive and the suite all.
HYBRID_GEOMETRIES: tuple[Geometry, ...] = (
    Geometry(3, 1, 2, 1, 1, seq_ids=(0, 1), layer_windows=(None, 2)),
    Geometry(3, 1, 2, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=4, max_depth=5, tree_depth=3, layer_windows=(None, 2)),
    Geometry(3, 2, 2, 1, 1, seq_ids=(0, 1), max_depth=5, layer_windows=(2, None), quick=False),
    Geometry(4, 1, 2, 1, 1, prefix_caching=True, seq_ids=(0, 1), vocab=1, max_prompt=4, max_depth=5, tree_depth=3, layer_windows=(None, 3), quick=False),
    Geometry(3, 1, 3, 1, 1, seq_ids=(0, 1), max_depth=5, tree_depth=3, layer_windows=(2, None, 2), quick=False),
    Geometry(4, 1, 3, 1, 1, seq_ids=(0, 1), max_depth=5, tree_depth=3, layer_windows=(None, 2, 3), quick=False),
)
EVERY_GEOMETRY: tuple[Geometry, ...] = GEOMETRIES + WINDOW_GEOMETRIES + HYBRID_GEOMETRIES  # what `run` walks of them: those the port announces
BAD_CHUNKS = ("2-D", "shapes differ", "wrong H", "wrong D", "T = 0")


def actions(model: ModelKVCache, g: Geometry) -> list[Action]:
    """Every call tried from this state: the valid ones and the error table's bad inputs."""
    ids = g.seq_ids
    if model.is_closed():
        after = [("add_seq", ids[0]), ("fork", ids[0], ids[1]), ("append", ids[0], 0, 1), ("gather", ids[0], 0),
                 ("seq_len", ids[0], 0), ("block_table", ids[0]), ("free", ids[0]), ("stats",), ("num_free_blocks",),
                 ("close",)]
        return after + ([("extend", ids[0], (0,))] if g.prefix_caching else [])
    held = set(model.live())
    live = [s for s in ids if s in held]
    dead = [s for s in ids if s not in held]
    out: list[Action] = []
    for s in dead:  # a new sequence; with prefix caching, one for each prompt
        out += [("add_seq", s, p) for p in g.prompts()] if g.prefix_caching else [("add_seq", s)]
    out += [("add_seq", s) for s in live]  # a live id added again
    for p in ids:  # every fork of one id onto another: the child live or not, the parent unknown or not
        for c in ids:
            if p != c and not (p in dead and c in live):  # one fault at most here; two below
                out.append(("fork", p, c))
    out += [("fork", s, s) for s in live]  # onto itself: a live child
    for s in live:
        out += [("append", s, layer, t) for layer in range(g.n_layers) for t in range(1, g.block_size + 2)]
        if g.prefix_caching:
            out += [("extend", s, (tok,)) for tok in range(g.vocab)]
    out += [("free", s) for s in ids]
    for s in dead:  # an unknown id, for every verb that takes one
        out += [("append", s, 0, 1), ("gather", s, 0), ("seq_len", s, 0), ("block_table", s)]
        if g.prefix_caching:
            out.append(("extend", s, (0,)))
    if live:  # bad layers, shapes and tokens, on a live sequence (the first)
        s = live[0]
        out += [("append", s, g.n_layers, 1), ("append", s, -1, 1), ("gather", s, g.n_layers), ("seq_len", s, -1)]
        out += [("bad_chunk", s, kind) for kind in BAD_CHUNKS]
        if g.prefix_caching:
            out.append(("extend", s, (-1,)))
    if g.prefix_caching and dead:
        out.append(("add_seq", dead[0], (0, -1)))
    out += two_faults(live, dead, g)
    out.append(("close",))
    return out


def two_faults(live: list[int], dead: list[int], g: Geometry) -> list[Action]:
    """Calls that break two rules at once (CONTRACT.md "Which error wins": the id first): an unknown id
    (the first) with a bad layer or each bad shape; an unknown parent onto each live child; with prefix
    caching, an unknown id with a negative token and a live id with one."""
    out: list[Action] = []
    if dead:
        s = dead[0]
        out += [("append", s, g.n_layers, 1), ("gather", s, -1), ("seq_len", s, g.n_layers)]
        out += [("bad_chunk", s, kind) for kind in BAD_CHUNKS]
        out += [("fork", s, c) for c in live]
        if g.prefix_caching:
            out.append(("extend", s, (-1,)))
    if g.prefix_caching and live:
        out.append(("add_seq", live[0], (0, -1)))
    return out


@functools.lru_cache(maxsize=4096)
def chunk(g: Geometry, seq: int, layer: int, pos: int, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The (k, v) an append of T positions from `pos` sends: v = -k; read-only, shared by every call that sends it."""
    k = value(g, seq, layer, pos, t)
    v = -k
    k.setflags(write=False)
    v.setflags(write=False)
    return k, v


@functools.lru_cache(maxsize=64)
def bad_chunk(h: int, d: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The (k, v) of one of the error table's bad shapes (read-only)."""
    shapes = {"2-D": ((h, 1), (h, 1)), "shapes differ": ((h, 1, d), (h, 2, d)), "wrong H": ((h + 1, 1, d),) * 2,
              "wrong D": ((h, 1, d + 1),) * 2, "T = 0": ((h, 0, d),) * 2}[kind]
    k, v = np.ones(shapes[0], np.float16), np.ones(shapes[1], np.float16)
    k.setflags(write=False)
    v.setflags(write=False)
    return k, v


def value(g: Geometry, seq: int, layer: int, pos: int, t: int) -> np.ndarray:
    """K of T positions from `pos` written by `seq` into `layer`: a distinct float16 value for every
    (seq, layer, position, head, dim), exact in float16 (all below 2048)."""
    h, d = g.n_kv_heads, g.d_head
    base = ((seq % 4) * g.n_layers + layer) * 64 + np.arange(pos, pos + t) % 64  # [T]
    grid = (base[None, :, None] * h + np.arange(h)[:, None, None]) * d + np.arange(d)[None, None, :]
    return (1 + grid % 2047).astype(np.float16)


def concrete(action: Action, model: ModelKVCache, g: Geometry) -> tuple[str, tuple[Any, ...]]:
    """The Python call (method, args) an action is in this state: an append's values depend on its position."""
    verb = action[0]
    h, d = g.n_kv_heads, g.d_head
    if verb == "append":
        _, s, layer, t = action
        pos = positions(model, s, layer)
        return "append", (s, layer, *chunk(g, s, layer if 0 <= layer < g.n_layers else 0, pos, t))
    if verb == "bad_chunk":
        return "append", (action[1], 0, *bad_chunk(h, d, action[2]))
    if verb in ("add_seq", "extend") and len(action) == 3:
        return verb, (action[1], list(action[2]))
    return verb, tuple(action[1:])


def describe(action: Action) -> str:
    verb = action[0]
    if verb == "append":
        return f"append({action[1]}, {action[2]}, T={action[3]})"
    if verb == "bad_chunk":
        return f"append({action[1]}, 0, bad chunk: {action[2]})"
    if verb in ("add_seq", "extend") and len(action) == 3:
        return f"{verb}({action[1]}, {list(action[2])})"
    return f"{verb}({', '.join(map(str, action[1:]))})"
