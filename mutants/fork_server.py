"""A fork server for the mutants' pytest runs: pytest, xdist, NumPy and Hypothesis imported once, each run a fork.

A runner starts hundreds of `python -m pytest` processes, and each spends most of a second starting the interpreter
and importing those packages before it collects a test. This process imports them once, then starts each run by
forking itself. It never imports a module of this repository (it runs as `python -P mutants/fork_server.py`, its
folder kept off sys.path), so each run imports the implementation, the suite and the oracle afresh, from where its
own sys.path finds them, and the guard plugin (mutants/guard.py) still checks where they came from.

Requests are JSON lines on stdin, answered one at a time: {"args", "cwd", "env", "output", "timeout"}. The forked
child becomes what `python -m pytest ARGS`, started in cwd with env, would be: env as its environment, cwd and then
PYTHONPATH's entries first on sys.path, bytecode written unless PYTHONDONTWRITEBYTECODE is set, stdin empty, stdout
and stderr into the output file, a process group of its own. The reply is a JSON line: {"code": its exit code, or
null when it ran past the timeout and its whole process group was killed}. mutants/pytest_run.py starts the servers
and decides which runs they may take (those whose environment differs from the server's only where no import here
reads it).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

# What every run imports before it collects a test, none of it ours (a run of tests/ imports 312 modules from
# site-packages). Not xdist: its plugin freezes sys.path when imported, for its workers.
PRELOADED = (
    "numpy", "numpy.linalg", "hypothesis", "hypothesis.stateful", "hypothesis.strategies", "pytest", "_pytest.config",
    "_pytest.pytester", "_pytest.junitxml", "execnet", "pygments.lexers", "pygments.formatters", "sortedcontainers",
)
# Hypothesis imports this module of its own, which pytest would assertion-rewrite were it imported after pytest
# started (it holds no assert), and warns that it cannot: the one difference the preloading makes, silenced.
QUIET = ["-W", "ignore:Module already imported so cannot be rewritten; _hypothesis_globals:pytest.PytestAssertRewriteWarning"]


def child(request: dict[str, Any]) -> NoReturn:
    """Become the run: set up what a fresh `python -m pytest` would see, run pytest, exit with its code."""
    code = 3  # pytest's "internal error": a run that cannot start is an error, never a kill or a survivor
    try:
        os.setpgid(0, 0)
        out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        empty = os.open(os.devnull, os.O_RDONLY)
        os.dup2(empty, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.close(empty)
        env: dict[str, str] = request["env"]
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(env)
        sys.path[:0] = [os.getcwd(), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        import pytest

        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *QUIET, *request["args"]]
        code = int(pytest.console_main())
    except BaseException:  # noqa: BLE001 - whatever stops the run is reported in its output
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def run(request: dict[str, Any]) -> int | None:
    """Fork one run and wait for it: its exit code (minus the signal that ended it), None past the timeout."""
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        child(request)
    ended = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([ended], [], [], request["timeout"])
    finally:
        os.close(ended)
    # Before the run is reaped, while its pid (and so its group's id) is still its own: past the timeout the run and
    # its group are killed; at its end, what it started and left behind.
    kill(os.killpg, pid)
    if not ready:
        kill(os.kill, pid)  # were it stopped before it made its group
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if ready else None


def kill(how: Callable[[int, int], None], pid: int) -> None:
    try:
        how(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main() -> None:
    for name in PRELOADED:
        importlib.import_module(name)
    print(json.dumps({"ready": sorted(PRELOADED)}), flush=True)
    for line in sys.stdin:
        print(json.dumps({"code": run(json.loads(line))}), flush=True)


# What a run's environment may set that no import above reads: the child applies the first two to itself, and the
# suite's own modules (imported in the child) read the rest. A run differing from a server's environment in any other
# variable is given a server started with its own.
RUN_ONLY = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "HYPOTHESIS_PROFILE")


def startup_env(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of a run's environment a server must have been started with."""
    return tuple(sorted((k, v) for k, v in env.items() if k not in RUN_ONLY and not k.startswith("PAGED_")))


class ServerGone(Exception):
    """The server ended or answered out of turn: the run's verdict is an error."""


class Server:
    """One fork server process, one run at a time."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={k: v for k, v in env.items() if k != "PYTHONPATH"},
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        if "ready" not in json.loads(self.stdout.readline() or "{}"):
            self.stop()
            raise ServerGone("the fork server did not start")

    def run(self, args: Sequence[str], cwd: Path, env: Mapping[str, str], output: Path, timeout: float | None) -> int | None:
        request = {"args": list(args), "cwd": str(cwd), "env": dict(env), "output": str(output), "timeout": timeout}
        try:
            self.stdin.write(json.dumps(request) + "\n")
            self.stdin.flush()
            reply = json.loads(self.stdout.readline() or "{}")
        except (OSError, ValueError) as exc:
            raise ServerGone(f"the fork server failed: {exc!r}") from exc
        if "code" not in reply:
            raise ServerGone("the fork server ended during the run")
        code: int | None = reply["code"]
        return code

    def stop(self) -> None:
        self.stdin.close()
        self.proc.wait()


class ForkServers:
    """Pytest runs started by fork servers: one server per run at once (a runner's threads share them), each started
    with the environment of the first run it takes (`startup_env`). Use as a context manager: it stops them all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[tuple[tuple[str, str], ...], list[Server]] = {}
        self.started: list[Server] = []

    @staticmethod
    def usable() -> bool:
        """Whether this system has what the servers need (fork, pidfd_open: Linux; python -P: 3.11)."""
        return hasattr(os, "fork") and hasattr(os, "pidfd_open") and sys.version_info >= (3, 11)

    def run(self, args: Sequence[str], cwd: Path, env: Mapping[str, str], output: Path, timeout: float | None) -> tuple[int | None, str]:
        """`python -m pytest ARGS` in cwd with env, forked by a server: (exit code or None at the timeout, its output)."""
        key = startup_env(env)
        with self.lock:
            free = self.idle.setdefault(key, [])
            server = free.pop() if free else None
        try:
            if server is None:
                server = Server(env)
                with self.lock:
                    self.started.append(server)
            code = server.run(args, cwd, env, output, timeout)
        except ServerGone as exc:
            return -1, f"{read(output)}\nmutants: {exc}"
        with self.lock:
            self.idle[key].append(server)
        return code, read(output)

    def __enter__(self) -> ForkServers:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        for server in self.started:
            server.stop()


# A runner's option to start each run as a new interpreter instead (mutants/runner.py, mutants/engines/runner.py).
FRESH_PROCESSES_HELP = "start each pytest run as a new interpreter, not forked by a fork server (mutants/fork_server.py)"


def for_runner(fresh_processes: bool) -> ForkServers | None:
    """A runner's fork servers; None (each run a new interpreter) under --fresh-processes or where they cannot run."""
    return None if fresh_processes or not ForkServers.usable() else ForkServers()


def read(output: Path) -> str:
    try:
        return output.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


if __name__ == "__main__":
    main()
