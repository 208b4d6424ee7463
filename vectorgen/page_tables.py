"""CONTRACT.md's page tables for kernels (opt-in; the vectors require the capability `page_tables`): what
`page_table`, `slot_mapping` and `kv_pages` export at the lengths where an export goes wrong (0, 1, B - 1,
B, B + 1, every multiple of P, for P = B and P < B), after a fork and a copy on write, after a window's
releases, for a prefix hit served from the right, in a hybrid model's groups, for bad input, at the
decode order's boundary (the append of token n releases the block of position n - W + 1, which the
kernel read just before), and at an engine's geometry.

`kv_pages` travels as FIRST/COUNT (`kv_pages C LAYER P FIRST COUNT`): the vectors read only pages whose
every slot a sequence wrote and holds, named by a `page_table` answer just before (so that a port of
`allocation=any` can be asked for them at its own pages), never a free block's stale contents.
"""

from __future__ import annotations

from typing import Any, Callable

from vectorgen.float16 import any_bits
from vectorgen.script import Script, Vector, chunk, scripted

VECTORS: list[Vector] = []


def page_vector(vid: str, comment: str, flags: str = "") -> Callable[[Callable[[Script], None]], Vector]:
    """A page-table vector: id `page-tables-{vid}`, flagged page-tables, with `flags` besides."""
    return scripted(VECTORS, f"page-tables-{vid}", comment, f"page-tables {flags}".strip())


def divisors(block_size: int) -> list[int]:
    """Every page size P of blocks of B: the divisors of B, B first."""
    return [p for p in range(block_size, 0, -1) if block_size % p == 0]


def export(c: Any, seqs: list[int], layers: range | tuple[int, ...], block_size: int) -> None:
    """Every export of every layer: the batch's page tables for every P, and each sequence's slot mapping of
    every position it holds (-1 where its window released the entry)."""
    for layer in layers:
        for p in divisors(block_size):
            c.page_table(seqs, layer, p)
        for seq in seqs:
            c.slot_mapping(seq, layer, 0, c.seq_len(seq, layer))


def read_pages(s: Script, c: Any, handle: int, seq: int, layer: int, p: int) -> None:
    """`kv_pages` of the sequence's full pages (every slot written) among those its page table names, as
    FIRST/COUNT requests of one run of consecutive pages each, after the page_table answer that names them."""
    _, indices, last = c.page_table([seq], layer, p)
    full = [int(page) for page in (indices if last[0] == p else indices[:-1])]
    runs: list[list[int]] = []
    for page in full:
        if runs and runs[-1][-1] + 1 == page:
            runs[-1].append(page)
        else:
            runs.append([page])
    for run in runs:
        s.raw(f"kv_pages {handle} {layer} {p} {run[0]} {len(run)}")


@page_vector(
    "lengths",
    "B = 4, one layer, two sequences: after each of 13 appends of one position (lengths 0, 1, B - 1, B, B + 1 and "
    "every multiple of P), the batch's page tables for P = 4, 2, 1 (last_page_len P, not 0, at a multiple of P; no "
    "page at length 0), the slot mappings, and kv_pages of every full page",
)
def lengths(s: Script) -> None:
    c = s.new(12, 4, 1, 2, 2)
    c.add_seq(0)
    c.add_seq(1)
    c.append(1, 0, *chunk(2, 6, 2, 10))
    export(c, [0, 1], (0,), 4)
    for n in range(13):
        c.append(0, 0, *chunk(2, 1, 2, 20 + n))
        export(c, [1, 0], (0,), 4)
    for p in divisors(4):
        read_pages(s, c, 0, 0, 0, p)
    c.slot_mapping(0, 0, 11, 2)  # a range inside the sequence: the slots of positions 11 and 12
    c.slot_mapping(0, 0, 13, 0)  # no position: empty
    c.page_table([], 0, 2)  # an empty batch: indptr [0]


@page_vector(
    "fork-and-copy-on-write",
    "B = 4, two layers: a fork's pages are the parent's; the child's write into the shared last block copies it, and "
    "the child's tables name the copy from then on (not the stale id), the parent's the original; a layer's pages end "
    "at its own length, not the longest layer's",
    "copy-on-write layers allocation-order",
)
def fork_cow(s: Script) -> None:
    c = s.new(10, 4, 2, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *chunk(1, 6, 2, 30))
    c.append(0, 1, *chunk(1, 2, 2, 31))  # layer 1 shorter: one page of B, not two
    c.fork(0, 1)
    export(c, [0, 1], range(2), 4)
    c.append(1, 0, *chunk(1, 1, 2, 32))  # copies block 1 (positions 4, 5) for the child
    export(c, [0, 1], range(2), 4)
    c.append(1, 1, *chunk(1, 1, 2, 33))  # layer 1's write into block 0, shared: copied too
    export(c, [1, 0], range(2), 4)
    for layer in range(2):
        for seq in (0, 1):
            read_pages(s, c, 0, seq, layer, 2)
    s.observe(c, [0, 1])


@page_vector(
    "window-releases",
    "B = 2, W = 5, one position at a time to 12: the pages start at the page of the first shown position (released "
    "entries never appear, the first page's leading positions masked by the kernel), slot_mapping answers -1 for a "
    "released position; P = 2 and 1",
    "sliding-window",
)
def window_releases(s: Script) -> None:
    c = s.new(8, 2, 1, 1, 2, sliding_window=5)
    c.add_seq(0)
    for n in range(12):
        c.append(0, 0, *chunk(1, 1, 2, 40 + n))
        c.block_table(0)
        export(c, [0], (0,), 2)
    for p in divisors(2):
        read_pages(s, c, 0, 0, 0, p)


@page_vector(
    "decode-order-boundary",
    "B = 4, W = 5, layer 1 of a hybrid model: at length n = 7 (n + 1 - W + 1 = 4, a multiple of B) page_table exports "
    "the block of position n - W + 1 = 3, which the kernel reads (the window of the token at n: positions 3 .. 6, then "
    "the token merged in); the append of token 7 then releases that block, and the next page_table no longer names it",
    "sliding-window hybrid",
)
def decode_order(s: Script) -> None:
    c = s.new(10, 4, 2, 1, 2, layer_windows=(None, 5))
    c.add_seq(0)
    for n in range(10):
        for layer in range(2):
            c.page_table([0], layer, 4)  # before the append: what the kernel reads for the token at n
            c.page_table([0], layer, 2)
            c.append(0, layer, *chunk(1, 1, 2, 50 + 2 * n + layer))
        c.block_table(0, 1)
    export(c, [0], range(2), 4)


@page_vector(
    "prefix-hit-from-the-right",
    "B = 2, W = 3, prefix caching: a hit served from the right (entries before the window -1) exports only the pages "
    "of the served window, and the slots of the released positions are -1; the served sequence then decodes on",
    "prefix-caching sliding-window",
)
def hit_from_the_right(s: Script) -> None:
    c = s.new(12, 2, 1, 1, 2, prefix_caching=True, sliding_window=3)
    prompt = [1, 2, 3, 4, 5, 6, 7, 8]
    c.add_seq(0, prompt)
    c.append(0, 0, *chunk(1, 8, 2, 60))
    c.free(0)
    c.add_seq(1, [*prompt, 9])  # served 8 positions: blocks 2 and 3 of the window, -1 before them
    c.block_table(1)
    export(c, [1], (0,), 2)
    for t in (9, 10, 11):
        c.extend(1, [t])
        c.append(1, 0, *chunk(1, 1, 2, 60 + t))
        export(c, [1], (0,), 2)
    s.observe(c, [1])


@page_vector(
    "hybrid-groups",
    "B = 2, layers (full, W = 3, full, W = 3): each layer's pages come from its own group's table, the windowed "
    "layers' only from their window; a batch of a fork and its parent after the child's copy on write",
    "hybrid sliding-window copy-on-write",
)
def hybrid_groups(s: Script) -> None:
    c = s.new(24, 2, 4, 1, 2, layer_windows=(None, 3, None, 3))
    c.add_seq(0)
    for layer in range(4):
        c.append(0, layer, *chunk(1, 5 + layer % 2, 2, 70 + layer))
    c.fork(0, 1)
    for layer in range(4):
        c.append(1, layer, *chunk(1, 1, 2, 80 + layer))
    for seq in (0, 1):
        c.block_table(seq, 0)
        c.block_table(seq, 1)
    export(c, [0, 1], range(4), 2)
    read_pages(s, c, 0, 1, 1, 1)
    read_pages(s, c, 0, 1, 2, 2)


@page_vector(
    "bad-input",
    "the contract's errors, nothing changed: an unknown id, one twice, a bad layer, P not dividing B (0, -1, 3, 8), "
    "a slot range outside the layer, kv_pages outside the pool; the order: closed, the ids in turn, the layer, P; "
    "after close every call is invalid_argument",
    "error-table error-precedence close",
)
def bad_input(s: Script) -> None:
    c = s.new(6, 4, 2, 1, 2)
    c.add_seq(0)
    c.add_seq(1)
    c.append(0, 0, *chunk(1, 5, 2, 90))
    for seqs, layer, p in (
        ([0, 7], 0, 4), ([0, 0], 0, 4), ([0, 1, 0], 0, 4), ([7, 0, 0], 0, 4), ([0, 0, 7], 0, 4), ([0], 2, 4), ([0], -1, 4),
        ([0], 0, 0), ([0], 0, -1), ([0], 0, 3), ([0], 0, 8), ([7], 2, 3), ([0, 0], 2, 3), ([0], 2, 3),
    ):
        s.attempt(c.page_table, seqs, layer, p)
    for seq, layer, start, count in ((7, 0, 0, 1), (0, 2, 0, 1), (0, 0, -1, 1), (0, 0, 0, -1), (0, 0, 3, 3), (0, 0, 6, 0),
                                     (0, 1, 0, 1), (7, 2, -1, -1), (0, 2, -1, 1)):
        s.attempt(c.slot_mapping, seq, layer, start, count)
    for layer, p in ((2, 4), (0, 3), (2, 3), (0, 0)):
        s.attempt(c.kv_pages, layer, p)
    for fields in ("0 4 -1 1", "0 4 5 2", "0 4 0 7", "0 2 11 2", "0 4 0 -1", "2 4 0 1", "0 3 0 1"):
        s.raw(f"kv_pages 0 {fields}")
    s.raw("kv_pages 0 0 4 6 0")  # no page, at the end of the pool: empty
    s.observe(c, [0, 1])
    export(c, [0, 1], range(2), 4)
    c.close()
    for call, args in ((c.page_table, ([0], 0, 4)), (c.slot_mapping, (0, 0, 0, 1)), (c.kv_pages, (0, 4)), (c.page_table, ([7], 2, 3))):
        s.attempt(call, *args)


@page_vector(
    "engine-geometry-b16-l32-h8-d128",
    "N = 64, B = 16, L = 32, H = 8, D = 128: 17 positions (B + 1) in layer 0, one in layer 31, none in the others; a "
    "fork whose write copies block 1 of every layer; the batch's page tables of layers 0, 5 and 31 for P = 16, 4 and "
    "1; kv_pages of a few pages only",
    "engine-geometry copy-on-write layers",
)
def engine_geometry(s: Script) -> None:
    c = s.new(64, 16, 32, 8, 128)
    c.add_seq(0)
    c.append(0, 0, *any_bits(8, 17, 128, 100))
    c.append(0, 31, *any_bits(8, 1, 128, 101))
    c.fork(0, 1)
    c.append(1, 0, *any_bits(8, 1, 128, 102))  # position 17, in the shared block 1: copied, every layer
    for layer in (0, 5, 31):
        for p in (16, 4, 1):
            c.page_table([0, 1], layer, p)
        for seq in (0, 1):
            c.slot_mapping(seq, layer, 0, c.seq_len(seq, layer))
    _, indices, _ = c.page_table([1], 0, 4)
    s.raw(f"kv_pages 0 0 4 {indices[1]} 2")  # positions 4 .. 11 of layer 0, two pages of the shared block 0
    _, indices, _ = c.page_table([1], 0, 1)
    s.raw(f"kv_pages 0 0 1 {indices[16]} 2")  # positions 16, 17 of the child's copy: the parent's, then its own
    _, indices, _ = c.page_table([0], 31, 1)
    s.raw(f"kv_pages 0 31 1 {indices[0]} 1")
