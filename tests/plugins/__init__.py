"""The suite's pytest plugins, one a job, loaded by tests/conftest.py and meta_tests/conftest.py
(`pytest_plugins = PLUGINS`), in the checkout and in the copy of the suite an installed gate ships:

- `hypothesis_patches`: the two Hypothesis internals the suite sets (the shrinking time limit, no
  constants drawn from loaded modules), each with the meta-test that fails when it stops working;
- `hypothesis_profiles`: the Hypothesis profiles (`ci`, `dev`, `thorough`, `mutation`, `mutmut`,
  `gate`, `gate-shrink`), loaded from HYPOTHESIS_PROFILE;
- `implementation`: the implementation under test and the run's settings (--impl, --profile,
  --transcript, --coverage-out: one `testkit.config.Config`, built here, the edge), the tests a
  driver skips (the Python surface, the benchmark, a capability it does not announce), the report
  header and the `impl` fixture;
- `expected_failures`: --xfails (testkit/xfails.py), strict: a listed test passes or fails otherwise;
- `strict_outcomes`: the outcomes only the suite may give (an expected failure no entry lists, a skip
  for none of tests/skips.py's reasons, are failures), judged with the listed ones in one place, and
  the failure's transcript;
- `covered`: --covered, the tests that would run again what the whole gate's early steps ran, deselected;
- `outcomes_record`: --outcomes, each test's outcome (with its calls into an engine and the
  capabilities it needs), the tests selected and the number deselected, for ci/gate;
- `order`: the run order (cheap, broad tests first), so a run that stops at its first failure ends early.

Each hook is defined once in the module of its job (`ruff check --select F811` in .ci/run: a hook
defined twice in one module silently replaces the first).
"""

PLUGINS = [
    "tests.plugins.hypothesis_patches",
    "tests.plugins.hypothesis_profiles",
    "tests.plugins.implementation",
    "tests.plugins.expected_failures",
    "tests.plugins.strict_outcomes",
    "tests.plugins.covered",
    "tests.plugins.outcomes_record",
    "tests.plugins.order",
]
