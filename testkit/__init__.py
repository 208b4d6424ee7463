"""What the conformance suite (tests/) and the gate that drives it (paged_gate/) share, in one direction:
both import this, it imports neither (nor does the suite import the gate).

- `config`: the run's settings (`Config`: the PAGED_* environment, read once, handed to child processes);
- `locate`: where the suite lives (a checkout, or the copy an installed gate ships) and its vectors;
- `outcomes`: the outcomes record the suite writes (`--outcomes`) and the gate reads, its fields named once;
- `xfails`: the --xfails file's format, parsed once (the suite applies it, the gate counts it);
- `covered`: what the gate's early steps ran (vectors replayed, geometries walked), which the suite's run then deselects;
- `chunks`, `random_ops`: the seeded test data that tests and vectors are built from (numpy only).
"""
