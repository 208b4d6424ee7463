"""The flags a conformance vector carries, each with what it checks: the one table of them.

A Script refuses a flag not named here, and NOTES.md explains each from this table, so a port's
runner can select vectors by what they check (in the manner of Wycheproof's test vectors).
"""

from __future__ import annotations

FLAGS: dict[str, str] = {
    "seed-example": "the worked example of docs/PROTOCOL.md (\"A worked transcript\"): five tokens one at a time, a fork, the child's write, every observable after each call",
    "seed-pitfall": "a pitfall a port is likeliest to have; the id names its planted mutant (s01..s13, listed in mutants/README.md)",
    "error-table": "one row of CONTRACT.md's error table: the error's kind, and nothing observable changes",
    "error-precedence": "calls that break several rules at once: the kind CONTRACT.md's \"Which error wins\" gives, and nothing observable changes",
    "out-of-blocks": "an append that needs more blocks (copies on write counted) than it can take: num_free_blocks(), free plus cached",
    "allocation-order": "the pinned policy: lowest free id first, one append's blocks in position order",
    "block-ids": "every id a block table holds is a block of the pool, 0 .. N-1, under every profile (a port with a reserved block reports its ids after its documented shift)",
    "copy-on-write": "a write into a block another sequence holds copies it first, every layer",
    "layers": "each layer has its own length; the table covers the longest",
    "close": "close(), and every call after it",
    "integer-range": "CONTRACT.md's integer ranges, past the boundaries of 8, 16 and 32-bit types",
    "random": "a seeded random session of add, fork, append and free, checked after every call",
    "protocol": "a rule of docs/PROTOCOL.md itself (the handshake, quit, how fields are spelled): the answer each such request gets, and that it changes nothing",
    "prefix-caching": "CONTRACT.md's prefix caching (opt-in): hits, keys, release and eviction order, stats; needs the capability",
    "sliding-window": "CONTRACT.md's sliding window (opt-in): gather returns the window, blocks out of every layer's window released (-1 in the table), with prefix caching too; needs the capability",
    "hybrid": "CONTRACT.md's hybrid models (opt-in): layers of several windows in one cache, a table per group (`block_table C S LAYER`) on one pool, one capacity check, release per group, free group by group, hits every group can serve; needs the capability",
    "page-tables": "CONTRACT.md's page tables for kernels (opt-in): `page_table`'s indptr, indices and last_page_len for pages of P dividing B, `slot_mapping`, `kv_pages` read by FIRST/COUNT; at the lengths where they go wrong, after forks, copies on write, window releases and prefix hits, per hybrid group, at the decode order's boundary; needs the capability",
    "engine-geometry": "the geometries real engines run: B = 8, 16 or 32, L >= 4 (SmolLM2's L = 30, H = 3, D = 64, B = 16), up to 8 heads and D = 128, windows of up to 4,096 positions that release blocks; few positions with data, so the files stay small",
    "float16-bits": "float16 values only float16 input carries, kept bit for bit: signalling and quiet NaNs with payloads of both signs, +-inf, subnormals, -0.0",
}

# The flags of an optional part of the contract, with the capability a vector of it requires (`# requires:`).
NEEDS: dict[str, str] = {
    "prefix-caching": "prefix_caching", "sliding-window": "sliding_window", "hybrid": "hybrid", "page-tables": "page_tables",
}
