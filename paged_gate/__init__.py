"""The gate a port's CI calls (`paged-gate`, or `ci/gate` in a checkout): one command, a short
verdict that names what it certified, the exit code is the verdict (0 PASS, 1 FAIL, 2 could not run,
3 PARTIAL).

One idea a module:
- `cli`: the entry point: the supervisor's checks, and the worker that reaches the implementation,
  runs the steps and prints the verdict;
- `options`: the command line, paths made absolute;
- `supervise`: the worker in a process of its own, so that no implementation ends the gate with exit 0;
- `plan`: the steps a run takes, cheapest first, ending at the first failure;
- `locate`: what only a source checkout has (planted mutants, mutmut), and this installation's scripts;
- `target`: reaching the implementation under test, and what it announces (profile, capabilities);
- `conformance`: the suite in two passes (a fast one without shrinking, then a recorded one);
- `transcripts`: replaying transcripts (the vectors, `--replay`), and the one the gate writes;
- `exhaustive`: the bounded exhaustive explorer as a step;
- `verdict`: a step's outcome, and the lines that report them;
- `junit`: the steps as JUnit XML, for CI systems.

What the gate shares with the suite it drives (the run's settings, where the suite and its vectors live,
the outcomes record, the xfails format, what its early steps covered, the test data) is `testkit`'s;
the suite never imports the gate.
"""
