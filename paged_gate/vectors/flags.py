"""The flags a conformance vector carries, each with what it checks: the one table of them.

A Script refuses a flag not named here, and NOTES.md explains each from this table, so a port's
runner can select vectors by what they check (in the manner of Wycheproof's test vectors).
"""

from __future__ import annotations

FLAGS: dict[str, str] = {
    "seed-example": "the seed's worked example (section 3), call by call",
    "seed-pitfall": "a pitfall of the seed's section 5; the id names its planted mutant (s01..s13)",
    "error-table": "one row of CONTRACT.md's error table: the error's kind, and nothing observable changes",
    "error-precedence": "calls that break several rules at once: the kind CONTRACT.md's \"Which error wins\" gives, and nothing observable changes",
    "out-of-blocks": "an append that needs more blocks than are free (copies on write counted)",
    "allocation-order": "the pinned policy: lowest free id first, one append's blocks in position order",
    "block-ids": "every id a block table holds is a block of the pool, 0 .. N-1, under every profile (a port with a reserved block reports its ids after its documented shift)",
    "copy-on-write": "a write into a block another sequence holds copies it first, every layer",
    "layers": "each layer has its own length; the table covers the longest",
    "close": "close(), and every call after it",
    "integer-range": "CONTRACT.md's integer ranges, past the boundaries of 8, 16 and 32-bit types",
    "random": "a seeded random session of add, fork, append and free, checked after every call",
    "prefix-caching": "CONTRACT.md's prefix caching (opt-in): hits, keys, release and eviction order, stats; needs the capability",
}
