"""Planted mutants of the Rust port (ci/examples/rust): r01..r13 transpose the seed's thirteen
pitfalls (mutants/README.md) to the Rust source, in the same order; r14..r18
are integer-width bugs, each narrowing one quantity of CONTRACT.md's "Integer ranges" table;
r19..r27 transpose the prefix-caching mutants s18..s26, in the same order; r28..r30 are bugs only
a port makes: token ids narrowed to u16 (the wire's ids are i64), the eviction order's BTreeMap
popped from the wrong end (the newest cached block evicted, not the oldest), and a prefix node's
arena slot reused without a new generation (a sequence's stale reference to a pruned node reads
as live); r31 transposes s31, the layer and shapes checked before the sequence id; r32 and r33
are two of the bugs a Rust engineer planted in a port written from the documents (issue 29): a
slot computed as `p & (B - 1)`, right only when B is a power of two, and fork checking the child
before the parent. r34..r45 are the sliding window's (CONTRACT.md, "Sliding window (opt-in)"):
the window's length off by one either way (r34, r35), the release counted from the longest layer
(r36), a released block never let go of (r37), the release before the capacity check, vLLM's
order (r38), a prefix hit that ignores the window (r39) or needs ceil(W / B) blocks (r40), a
released entry that keeps its id (r41, the Rust form of freeing a -1 entry), gather of every
position (r42), release lowest index first (r43), release before registration (r44), a hit that
takes the blocks before the window too (r45). Their `caught_by` is `window`: `-k window` selects
the suite's window tests and the `window-*` vectors. r46..r49 narrow the window's integers (issue 38):
W in a u16 (r46), W read into an i32 before its range check (r47), the release's start m - W + 1
in a u16 (r48) and in a u32 that wraps below 0 (r49); the `range-window-*` vectors kill them.
r50..r54 transpose the hybrid models' s60..s64 (CONTRACT.md, "Hybrid models"): the groups' tables
freed last group first (r50), the hit of group 0 only (r51), a capacity check per group (r52), a
release in the full-attention group (r53), the groups' hits cut once to the shortest instead of the
fixed point (r54), and, s65..s67 transposed, a key of group 0 serving every group (r55), a fork that
holds group 0's blocks only (r56), block_table answering group 0's table whatever the layer (r57).
r58..r68 are the page tables a kernel reads (CONTRACT.md, "Page tables for kernels"): last_page_len = len % P
(r58), the page count from the table's length (r59) or the longest layer (r60), indptr exclusive by one (r61),
a released entry left in indices as -1 (r62), kv_pages' NHD rows read as HND (r63), group 0's table for every
layer (r64), kernel pages numbered b + j * N (r65), the slot mapping from 0 instead of the start (r66), a
released slot of -1 wrapped to the pool's last slot (r67), a stale id after copy on write (r68). Their
`caught_by` is `page`: `-k page` selects the page-table tests and the page-tables-* vectors (and, by name, the
tests of `paged`).
Their `caught_by` is `hybrid`: `-k hybrid` selects test_hybrid.py.

Every one of the thirteen pitfalls applies to the port, so none is skipped. Two are transposed
rather than copied:

- r03: the port lays a block of one layer out as [B][H][D] (position-major rows, vLLM's
  flash-attention layout), not the Python pool's [H][B][D]; the pitfall "viewing a block as
  [B][H][D]" becomes its mirror, gather reading the block as [H][B][D]. The symptom is the same:
  invisible with one head, values from the wrong slots with more.
- r13: the Python mutant leaves a silent no-op; in the port, with the T = 0 check gone, an empty
  chunk at position 0 computes its last block index from `start + tokens - 1`, which wraps in a
  release build, so the append answers out_of_blocks (or, with B = 1, runs the allocator dry and
  answers `err internal`); at other positions it is a silent no-op. Every case is a wrong answer
  to a request the contract says is invalid_argument.

The width bugs are written the way a port would write them, with `as` casts or a narrower field
type, and all compile. In a release build (the driver the gate runs) they wrap silently; in a
debug build (`cargo test`) the arithmetic ones (r15, r17) panic on overflow instead.

r22, r25 and r27 leave the allocator's counts inconsistent; the port's allocator refuses to go on
(a panic, which the driver answers `err internal`), where the Python one raises
BlockAccountingError; a test fails at the first answer that differs from the model's, whether
that is a count, a table or the panic.

Each `rNN_*.py` defines `MUTANT = Mutant(...)` like the `sNN` modules; its edits name files
relative to the repo root, and each `old` text must occur exactly once. `caught_by` names tests:
for r01..r13 the seed's catalog tests (as for sNN, run against the driver); for r14..r18, which
the catalog cannot reach, the conformance vectors of CONTRACT.md's integer ranges; for r19..r29
the sNN mutant's tests (the prefix machine and a prefix vector) or, for r28..r30, the vector that
reaches them. `notes` says
which of the crate's own unit tests (`cargo test`) kill each mutant too.
"""
