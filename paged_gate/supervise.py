"""The gate in two processes, so that no implementation can end it with exit 0 and no verdict.

The supervisor (the process `paged-gate` starts) never imports or starts the implementation. It runs a
worker (`worker_command`: the same interpreter, import path and arguments), which does everything and
tells the supervisor on a pipe which stage it is in and, once its verdict is printed, its exit code. A
worker that ends without one (the implementation called sys.exit or os._exit, or crashed), or takes too
long (`start_seconds` to import or start the implementation; `step_seconds` for any step that runs it),
gets the supervisor's verdict instead: CANNOT RUN (exit 2) while the implementation was being reached,
when time ran out, or when the gate itself failed; FAIL (exit 1) when the implementation ended the
process during a step. Never exit 0.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

REACH = "reaching the implementation"


class Channel:
    """The worker's end of the pipe: one line a message (`stage`, `why`, `verdict`). Without a pipe (the
    worker run by hand) the messages go nowhere."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.stage = REACH

    def send(self, kind: str, text: str) -> None:
        if self.fd is not None:
            os.write(self.fd, f"{kind} {' '.join(text.split())}\n".encode("utf-8", "replace"))

    def enter(self, stage: str, runs_implementation: bool = True) -> None:
        """A stage begins; one that runs the implementation is bounded by the supervisor's step_seconds."""
        self.stage = stage
        self.send("stage" if runs_implementation else "untimed", stage)

    def why(self, kind: str, text: str) -> None:
        """Why the worker ends without a verdict: kind `fail` (the implementation's doing) or `error` (the gate's)."""
        self.send(f"why-{kind}", text)

    def verdict(self, code: int) -> None:
        self.send("verdict", str(code))


@dataclass
class Ending:
    """How the worker ended: its verdict's exit code, or the supervisor's (with the verdict word and why)."""

    code: int
    word: str = ""
    why: str = ""


def worker_command(argv: list[str], prog: str, fd: int) -> list[str]:
    """The worker: this interpreter, with this process's import path (so it imports the same paged_gate and
    the same implementation as an in-process gate would), running the gate's main on the same arguments."""
    code = f"import sys; sys.path[:] = {sys.path!r}; from paged_gate.cli import main; sys.exit(main())"
    return [sys.executable, "-c", code, "--channel", str(fd), "--prog", prog, *argv]


def supervise(argv: list[str], prog: str, start_seconds: float, step_seconds: float) -> Ending:
    """Run the worker on argv and wait for its verdict; the Ending that says how it went."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    proc = subprocess.Popen(worker_command(argv, prog, write_fd), pass_fds=[write_fd], start_new_session=True)
    os.close(write_fd)
    stage, timed, why, verdict = REACH, True, ("", ""), None
    began = time.monotonic()
    pending = b""
    try:
        while True:
            limit = start_seconds if stage == REACH else step_seconds if timed else 0.0
            wait = max(0.0, began + limit - time.monotonic()) if limit > 0 else None
            if not select.select([read_fd], [], [], wait)[0]:
                stop(proc)
                what = f"{stage} took longer than {limit:g} s" + (" (PAGED_START_SECONDS)" if stage == REACH else " (--timeout)")
                return Ending(2, "CANNOT RUN", f"no verdict: {what}; the gate stopped it (does the implementation hang?)")
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                kind, _, text = line.decode("utf-8", "replace").partition(" ")
                if kind in ("stage", "untimed"):
                    stage, timed, began = text, kind == "stage", time.monotonic()
                elif kind.startswith("why-"):
                    why = (kind[4:], text)
                elif kind == "verdict":
                    verdict = int(text)
    except KeyboardInterrupt:
        stop(proc)
        raise
    finally:
        os.close(read_fd)
    status = proc.wait()
    if verdict is not None:  # what the worker printed counts, whatever its exit status (an atexit hook's os._exit, say)
        return Ending(verdict)
    return ended(status, stage, why)


def ended(status: int, stage: str, why: tuple[str, str]) -> Ending:
    """The verdict for a worker that ended with no verdict of its own."""
    how = f"signal {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
    kind, text = why
    if kind == "error":
        return Ending(2, "CANNOT RUN", text)
    if stage == REACH:
        return Ending(2, "CANNOT RUN", text or (
            f"the gate's process ended ({how}) while {stage}, with no verdict: the implementation exits on import or "
            "start-up (sys.exit, os._exit) or crashes"
        ))
    return Ending(1, "FAIL", (text or f"the gate's process ended ({how}) during {stage}, with no verdict") + (
        ": a call must return or raise the contract's error, never end the process (sys.exit, os._exit, a crash)"
    ))


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the worker and everything it started (its own session: pytest, its workers, drivers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
