"""Issue 35's broken ports (mutants/ports/, each a module on top of `paged` with one bug that shows
only at an engine's geometry, on a float16 special value or on a fork of a wide id) each get FAIL from
the gate's first step, the conformance vectors, with the first difference in the one format and the
vector that shows it named. Before the vectors of vectorgen/geometry.py, float16.py and
wide_forks.py, every one of them passed the whole gate.

Marked `gate` (the gate run as a command, as in test_gate.py): the installed gate does not run these.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

PORTS = Path(__file__).resolve().parents[1] / "mutants" / "ports"

# port -> the vectors that must be among those it fails (the cheapest that show its bug)
CAUGHT_BY = {
    "cow_layer0_at_engine_blocks": {"geometry-b8-l4-h4", "geometry-b16-l30-h8", "geometry-smollm2", "geometry-engine-b32-h8-d128"},
    "cow_layer0_at_four_layers": {"geometry-b8-l4-h4", "geometry-b16-l30-h8", "geometry-smollm2", "geometry-engine-b32-h8-d128"},
    "cow_layer0_at_four_heads": {"geometry-b8-l4-h4", "geometry-b16-l30-h8", "geometry-engine-b32-h8-d128"},
    "window_off_by_one_from_ten": {"window-geometry-b8-w10", "window-geometry-b32-w33", "window-geometry-b16-w4096"},
    "quietens_signalling_nans": {"float16-bits-kept"},
    "fork_large_id_without_references": {"range-fork-of-wide-ids-then-free"},
}

# A failing vector's first difference: `request N (CALL): WHAT=GOT, but should be WANT`.
ONE_FORMAT = re.compile(r"^    request \d+ \([^)]*\): .*=.*, but should be .+$")


def vectors_gate(port: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m paged_gate --impl PORT --vectors --all-failures`, with mutants/ports importable."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PORTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("PAGED_PROFILE", None)  # each port is broken under the default profile
    cmd = [sys.executable, "-m", "paged_gate", "--impl", port, "--vectors", "--all-failures"]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("port", sorted(CAUGHT_BY))
def test_a_broken_port_fails_at_the_vectors(port: str, tmp_path: Path) -> None:
    run = vectors_gate(port, tmp_path)
    heads = [line for line in run.stdout.splitlines() if line.startswith("=== gate verdict")]
    assert run.returncode == 1 and len(heads) == 1 and re.fullmatch(rf"=== gate verdict for {port}, profile default \(\d+ s\): FAIL ===", heads[0]), run.stdout[-3000:] + run.stderr[-2000:]
    lines = run.stdout.splitlines()
    failed = {line.split()[1].rstrip(":"): lines[i + 1] for i, line in enumerate(lines) if line.startswith("  FAILED ")}
    assert CAUGHT_BY[port] <= set(failed), (sorted(failed), run.stdout[-3000:])
    for name in CAUGHT_BY[port]:
        assert ONE_FORMAT.match(failed[name]), failed[name]



# port -> the state machine that must fail on it too, under the gate's fixed examples: it draws an engine's
# geometry, a window of 10 to 16 and float16 specials now and then (tests/strategies.py, tests/machines/window.py).
MACHINES = {
    "cow_layer0_at_four_layers": "tests/test_stateful.py::TestCacheMachine",
    "cow_layer0_at_engine_blocks": "tests/test_prefix.py::TestPrefixMachine",
    "window_off_by_one_from_ten": "tests/test_window.py::TestWindowMachine",
    "quietens_signalling_nans": "tests/test_stateful.py::TestCacheMachine",
}


@pytest.mark.parametrize("port", sorted(MACHINES))
def test_a_broken_port_fails_a_state_machine(port: str) -> None:
    """The machines alone catch each of these (a data or shape difference, in the one format), not only the vectors."""
    env = dict(os.environ, HYPOTHESIS_PROFILE="gate", PYTHONPATH=os.pathsep.join([str(PORTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("PAGED_PROFILE", None)
    root = PORTS.parent.parent
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider", MACHINES[port], f"--impl={port}"]
    run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    first = next((line for line in run.stdout.splitlines() if line.startswith("E       AssertionError: ")), "")
    assert run.returncode == 1 and re.search(r"=.*, but should be .+ \[.+\]$", first), run.stdout[-3000:]
    assert "coverage of" not in first, first  # a floor missed would be no catch
