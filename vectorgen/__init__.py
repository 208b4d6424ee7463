"""The conformance vectors' generator (`ci/vectors/generate`, `python -m vectorgen`):
scripted sessions on the oracle, recorded as transcripts with the oracle's answers.

One idea a module:
- `flags`: the flags a vector carries, and what each checks (NOTES.md's first table);
- `script`: a vector being written (`Script`: calls on the oracle, recorded as requests) and
  the decorators a family registers its vectors with;
- a module per family, each with its `VECTORS` in the order written: `pitfalls` (the worked
  example and the pitfalls s01..s13), `errors` (the error table, precedence, a pool too large),
  `protocol` (the wire's own rules: the handshake, quit, malformed requests), `allocation`
  (lowest free, copy on write, a pool of one block), `ranges` (the integer widths), `wide_forks`
  (a fork of a 64-bit id, then a free, writes and gathers), `random_sessions`, `prefix` (prefix
  caching), `window` (the sliding window, with prefix caching too), `hybrid` (hybrid models: a vector a rule of
  CONTRACT.md's section), `hybrid_ranges` (the integer widths on two and three groups), `hybrid_shapes` (hybrid
  models at engines' layouts), `float16` (NaN payloads,
  infinities, subnormals, -0.0 kept bit for bit), `geometry` (the geometries real engines run), `page_tables`
  (the page tables a kernel reads: `page_table`, `slot_mapping`, `kv_pages`);
- `corpus`: every family's vectors as files (one per profile value the answers depend on) and
  NOTES.md;
- `cli`: writing the corpus into a folder, or checking that the folder holds it.

Deterministic: seeded values, no clock, so the committed corpus can be checked byte for byte.
"""
