"""The fork server (mutants/fork_server.py): a run it forks is the run a new `python -m pytest` would be, in what the
run can see (sys.path, environment, folder, bytecode, exit code, nothing of ours imported before it), and a run past
its timeout is stopped whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mutants.fork_server import ForkServers

pytestmark = pytest.mark.skipif(not ForkServers.usable(), reason="the fork server needs os.fork, os.pidfd_open and Python 3.11")

# A test that writes down what its process sees, then passes or fails as FORK_TEST_OUTCOME says.
SEES = """import json, os, sys

def test_sees():
    ours = sorted(n for n in ("paged", "oracle", "wire", "explorer", "testkit", "mutants", "tests") if n in sys.modules)
    seen = {"path": sys.path[:3], "cwd": os.getcwd(), "env": os.environ.get("FORK_TEST_OUTCOME"), "ours": ours,
            "bytecode": not sys.dont_write_bytecode, "argv0": os.path.basename(sys.argv[0])}
    with open(os.environ["FORK_TEST_OUT"], "w") as out:
        json.dump(seen, out)
    assert os.environ["FORK_TEST_OUTCOME"] == "pass"
"""


@pytest.fixture(scope="module")
def servers() -> Iterator[ForkServers]:
    with ForkServers() as started:
        yield started


def run_both(tmp_path: Path, servers: ForkServers, outcome: str, timeout: float | None = 60) -> list[tuple[int | None, dict[str, object]]]:
    """The test run by a new interpreter and by the server, in the same folder with the same environment."""
    (tmp_path / "test_sees.py").write_text(SEES, encoding="utf-8")
    extra = tmp_path / "extra"
    extra.mkdir(exist_ok=True)
    args = ["-q", "-p", "no:cacheprovider", "test_sees.py"]
    found = []
    for how in ("fresh", "forked"):
        seen = tmp_path / f"{how}.json"
        env = dict(os.environ, PYTHONPATH=str(extra), FORK_TEST_OUTCOME=outcome, FORK_TEST_OUT=str(seen), PYTHONDONTWRITEBYTECODE="1")
        if how == "fresh":
            code: int | None = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True).returncode
        else:
            code, _ = servers.run(args, tmp_path, env, tmp_path / "out.txt", timeout)
        found.append((code, json.loads(seen.read_text(encoding="utf-8"))))
    return found


@pytest.mark.parametrize(("outcome", "code"), [("pass", 0), ("fail", 1)])
def test_a_forked_run_sees_what_a_new_interpreter_sees(tmp_path: Path, servers: ForkServers, outcome: str, code: int) -> None:
    fresh, forked = run_both(tmp_path, servers, outcome)
    assert fresh == forked, (fresh, forked)
    assert forked[0] == code
    assert forked[1]["path"][:2] == [str(tmp_path), str(tmp_path / "extra")]  # type: ignore[index]
    assert forked[1]["ours"] == [] and forked[1]["bytecode"] is False


def test_a_run_past_its_timeout_is_stopped_with_what_it_started(tmp_path: Path, servers: ForkServers) -> None:
    pid_file = tmp_path / "sleeper.pid"
    (tmp_path / "test_hangs.py").write_text(
        "import subprocess, time\n\ndef test_hangs():\n"
        f"    open({str(pid_file)!r}, 'w').write(str(subprocess.Popen(['sleep', '60']).pid))\n"
        "    time.sleep(60)\n",
        encoding="utf-8",
    )
    start = time.monotonic()
    code, _ = servers.run(["-q", "-p", "no:cacheprovider", "test_hangs.py"], tmp_path, dict(os.environ), tmp_path / "out.txt", 3)
    assert code is None and time.monotonic() - start < 30
    sleeper = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # killed; reaped by init soon after
            os.kill(sleeper, 0)
            time.sleep(0.05)


def test_a_run_with_another_start_up_environment_gets_a_server_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    args = ["-q", "-p", "no:cacheprovider", "test_ok.py"]
    with ForkServers() as servers:
        for env in (dict(os.environ, PAGED_X="1"), dict(os.environ, PAGED_X="2", HYPOTHESIS_PROFILE="ci"), dict(os.environ, OMP_NUM_THREADS="1")):
            assert servers.run(args, tmp_path, env, tmp_path / "out.txt", 60)[0] == 0
        assert len(servers.started) == 2  # PAGED_* and HYPOTHESIS_PROFILE are read by the suite, not at start-up
