"""Six sliding-window bugs written as ports of their own (mutants/window_ports, issue 38), kept as
regressions: the plain gate FAILs each at the step that should see it first (the range-window-*
vectors for the integer widths, the explorer's depth-3 step for a release after the last layer
only, whose state no vector reaches), the explorer alone finds the three hit bugs and the release bug
in 3 calls on the window's geometries, and its verdict names the parts of the contract it walked.

Marked `gate`: the gate runs as a command here; mutmut's selection leaves these out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import explorer
from tests import harness
from explorer.alphabet import WINDOW_GEOMETRIES, Geometry
from explorer.walk import Level, Result
from tests.assertions import assert_equal

pytestmark = pytest.mark.gate
if harness.impl_name() != "paged":
    pytest.skip("the gate's own tests: run with --impl=paged", allow_module_level=True)

PORTS = Path(__file__).resolve().parents[1] / "mutants" / "window_ports"
ROOT = Path(__file__).resolve().parent.parent


def gate(*args: str, tmp: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PORTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("PAGED_PROFILE", None)
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "paged_gate", *args, "--transcript-out", str(tmp / "t.txt")],
                         cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    return run, time.monotonic() - start


@pytest.mark.parametrize(
    "module, step, says",
    [
        ("window_in_16_bits", "FAIL  vectors", "FAILED range-window-past-16-bits"),
        ("window_start_in_16_bits", "FAIL  vectors", "FAILED range-hybrid-2-groups-length-past-16-bits"),  # its window's start past 65,535
        ("release_after_last_layer", "FAIL  vectors", "FAILED hybrid-B2-4-F-2"),  # a window group before the last layer
    ],
)
def test_the_plain_gate_fails_each_window_port_at_its_step(module: str, step: str, says: str, tmp_path: Path) -> None:
    run, seconds = gate("--impl", module, tmp=tmp_path)
    out = run.stdout
    assert_equal(f"the gate's exit code for {module}", run.returncode, 1, f"FAIL ({seconds:.0f} s)\n{out[-3000:]}{run.stderr[-2000:]}")
    verdict = out[out.rindex("=== gate verdict"):]
    assert_equal(f"the step that FAILs {module}", step in verdict and says in verdict, True, f"{step} ... {says}\n{verdict[:3000]}")


@pytest.mark.parametrize(
    "module, geometry",
    [
        ("release_after_last_layer", "N3-B2-L2-H1-D1-W2"),
        ("hit_tries_only_k_max", "N2-B1-L1-H1-D1-prefix-W2"),
        ("hit_ignores_the_window", "N2-B1-L1-H1-D1-prefix-W2"),
        ("no_registration_after_release", "N3-B2-L1-H1-D1-prefix-W2"),
    ],
)
def test_the_explorer_alone_finds_each_window_bug_in_3_calls(module: str, geometry: str) -> None:
    sys.path.insert(0, str(PORTS))
    try:
        results = explorer.run(module, 3, WINDOW_GEOMETRIES)
    finally:
        sys.path.remove(str(PORTS))
    failed = [r for r in results if r.failure is not None]
    found = [(r.geometry.name, r.failure.calls, r.failure.shortest) for r in failed if r.failure is not None]
    assert_equal(f"where the explorer finds {module}", found, [(geometry, 3, True)], "explorer.run(MODULE, 3, WINDOW_GEOMETRIES)")


def test_the_window_geometries_hold_w_at_most_b_and_above_it() -> None:
    pairs = {(g.sliding_window, g.block_size, g.prefix_caching) for g in WINDOW_GEOMETRIES}
    assert_equal("W and B of the window's geometries", {w for w, _, _ in pairs} == {2, 3} and {b for _, b, _ in pairs} == {1, 2, 3}, True, str(sorted(pairs, key=str)))
    assert_equal("a prefix geometry with W <= B and one with W > B", ({p for w, b, p in pairs if w <= b} >= {True}, {p for w, b, p in pairs if w > b} >= {True}), (True, True), str(sorted(pairs, key=str)))


def test_walked_names_the_parts_of_the_contract_walked() -> None:
    def result(g: Geometry, levels: int) -> Result:
        r = Result(g, 3, 3)
        r.levels = [Level(1, 1, 1, 1, 0.0)] * levels
        return r

    base, prefix = explorer.GEOMETRIES[0], next(g for g in explorer.GEOMETRIES if g.prefix_caching)
    w2, w3 = (next(g for g in WINDOW_GEOMETRIES if g.sliding_window == w) for w in (2, 3))
    assert_equal("walked", explorer.walked([result(base, 1), result(prefix, 1), result(w3, 1), result(w2, 2)]),
                 "base contract, prefix caching, sliding window (W=2, 3)", "every part walked")
    assert_equal("walked", explorer.walked([result(base, 1), result(w2, 0)]), "base contract", "a window geometry not walked a depth")


def test_exhaustive_on_a_windowed_port_says_it_walked_the_window(tmp_path: Path) -> None:
    run, _ = gate("--impl", "paged", "--exhaustive", "--depth", "2", tmp=tmp_path)
    head = next(line for line in run.stdout.splitlines() if line.startswith("=== gate verdict"))
    assert_equal("the --exhaustive verdict", (run.returncode, "sliding window (W=2, 3)" in head), (0, True), head)
    assert_equal("the step's line", "PASS  explorer, depth 2 (" in run.stdout and "base contract, prefix caching, sliding window (W=2, 3)" in run.stdout, True, run.stdout[-2000:])
