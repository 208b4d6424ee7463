"""The gate a port's CI calls (`paged-gate`, or `ci/gate` in a checkout): one command, a short
verdict that names what it certified, the exit code is the verdict (0 PASS, 1 FAIL, 2 could not run,
3 PARTIAL).

One idea a module:
- `cli`: the entry point: the supervisor's checks, and the worker that reaches the implementation,
  runs the steps and prints the verdict;
- `options`: the command line, paths made absolute;
- `supervise`: the worker in a process of its own, so that no implementation ends the gate with exit 0;
- `plan`: the steps a run takes, cheapest first, ending at the first failure;
- `locate`: where the suite lives (this checkout, or the copy shipped inside the package);
- `target`: reaching the implementation under test, and what it announces (profile, capabilities);
- `conformance`: the suite in two passes (a fast one without shrinking, then a recorded one);
- `transcripts`: replaying transcripts (the vectors, `--replay`), and the one the gate writes;
- `exhaustive`: the bounded exhaustive explorer as a step;
- `verdict`: a step's outcome, and the lines that report them;
- `junit`: the steps as JUnit XML, for CI systems;
- `chunks`: the seeded K and V chunks that tests and vectors are built from (numpy only);
- `vectors`: the conformance vectors' generator (`ci/vectors/generate`), a module per family.
"""
