"""The gate a port's CI calls (`paged-gate`, or `ci/gate` in a checkout): one command, a short
verdict, the exit code is the verdict (0 PASS, 1 FAIL, 2 could not run).

One idea a module:
- `cli`: the arguments, and the steps they select, in order;
- `locate`: where the suite lives (this checkout, or the copy shipped inside the package);
- `target`: whether the implementation under test can be reached, and the profile it declares;
- `conformance`: the suite in two passes (a fast one without shrinking, then a recorded one);
- `transcripts`: replaying transcripts (the vectors, `--replay`), and the one the gate writes;
- `exhaustive`: the bounded exhaustive explorer as a step;
- `verdict`: a step's outcome, and the lines that report them;
- `junit`: the steps as JUnit XML, for CI systems;
- `chunks`: the seeded K and V chunks that tests and vectors are built from (numpy only);
- `vectors`: the conformance vectors' generator (`ci/vectors/generate`), a module per family.
"""
