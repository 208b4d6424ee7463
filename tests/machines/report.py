"""A state machine's failure in the port's terms: the requests its cache received, as a transcript.

On Hypothesis's final run of a failing example (the minimal one, run again to be reported),
a machine makes its caches through `WireReport.impl()`, so that every call is logged as the
request a driver would be sent, by the recorder of the gate's failure files
(`wire.record.Recorder`). When a step fails, `WireReport.annotate` adds a note to the
exception: those requests with the oracle's answers (docs/PROTOCOL.md "Transcripts"), up to
the first answer that differs when they are replayed in a fresh session of the implementation
(`wire.replay.replay_fresh`, as `ci/gate --replay` does), then that answer. Hypothesis adds
its notes (the steps in Python rule names) after this one, so a port author reads the wire's
form first. The whole transcript is written to a temporary folder (one a process), to replay alone.

The same works for a module, a driver (exec:) and under allocation=any (the replay compares
block tables up to the renaming). Other runs record nothing: generating and shrinking cost
what they did.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument

from tests import harness
from wire.process import DriverError
from wire.replay import replay_fresh
from wire.codec import ProtocolError
from wire.diff import shorten
from wire.record import Recorder
from wire.target import Impl
from wire.transcript import Mismatch, Transcript

RECORDER = Recorder()  # one for every machine: an example's calls, from its start
FOLDER: list[Path] = []  # this process's folder of failure transcripts, made at its first failure
WIDTH = 150  # a line of the note at most (a payload is cut; the file has it whole)
SHOWN = 60  # requests shown up to the first that differs, at most (the file has them all)
READS = ("stats", "num_free_blocks", "block_table", "seq_len", "gather")  # the requests that change nothing


def final_run() -> bool:
    """Whether this is Hypothesis's final run of a failing example, the one it reports.

    Read from Hypothesis's build context (the flag its `note` uses); if that attribute ever
    goes, every run records (slower, the same report).
    """
    try:
        return bool(getattr(current_build_context(), "is_final", True))
    except InvalidArgument:  # not inside a Hypothesis test (a machine driven by hand)
        return False


class WireReport:
    """One example's calls as wire requests (recorded on the final run only), and the note they make on a failure."""

    def __init__(self) -> None:
        RECORDER.reset()
        self.recording = final_run()
        self.noted = False

    def impl(self) -> Any:
        """The implementation under test (`harness.impl()`), its caches recorded on the final run."""
        module = harness.impl()
        return RECORDER.wrap(module) if self.recording else module

    def annotate(self, exc: BaseException, machine: str) -> None:
        """Add the failure in the wire's terms to `exc`, once, on the final run (a test's failure, not Ctrl-C)."""
        if not self.recording or self.noted or not isinstance(exc, (Exception, pytest.fail.Exception)):
            return
        self.noted = True
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        try:
            text = in_wire_terms(f"{machine}: {first}")
        except Exception as problem:  # noqa: BLE001 - the test's own failure must stay the report
            text = f"(no transcript of this failure: {type(problem).__name__}: {problem})"
        if hasattr(exc, "add_note"):
            exc.add_note(text)
        else:  # Python 3.10: pytest shows __notes__ all the same
            exc.__notes__ = [*getattr(exc, "__notes__", []), text]


def first_difference(transcript: Transcript, impl: str | Impl) -> tuple[Mismatch | None, str | None]:
    """Replay `transcript` in a fresh session of `impl`: (its first mismatch or None, why it could not be replayed)."""
    try:
        mismatch, skipped = replay_fresh(transcript, impl, harness.profile())
    except (DriverError, ProtocolError) as exc:
        return None, f"replaying it: {exc}"
    return mismatch, skipped


def condensed(transcript: Transcript, last: int) -> tuple[Transcript, int]:
    """The first `last` requests without the reads (the invariant's) whose request and answer repeat one made since
    the last request that is not a read (they say nothing new), and how many were left out. The last one stays."""
    out = Transcript(notes=transcript.notes)
    seen: set[tuple[str, str]] = set()
    left_out = 0
    for i, (request, response) in enumerate(transcript.steps[:last]):
        if request.split(" ")[0] not in READS:
            seen.clear()
        elif (request, response) in seen and i < last - 1:
            left_out += 1
            continue
        seen.add((request, response))
        if i in transcript.released:
            out.released[len(out.steps)] = transcript.released[i]
        out.steps.append((request, response))
    return out, left_out


def in_wire_terms(comment: str) -> str:
    """The note: the recorded requests with the oracle's answers, up to the first that the implementation answers otherwise."""
    impl, profile = harness.impl_name(), harness.profile()
    transcript = RECORDER.failure(comment, impl, profile)
    if not FOLDER:
        FOLDER.append(Path(tempfile.mkdtemp(prefix="paged-failures-")))
    path = FOLDER[0] / f"{comment.split(':', 1)[0]}-{len(list(FOLDER[0].iterdir())) + 1}.txt"
    path.write_text(transcript.text(), encoding="ascii", errors="replace")
    mismatch, trouble = first_difference(transcript, harness.target())
    return described(transcript, mismatch, trouble, f"{path}; replay them alone: ci/gate --replay {path} --impl '{impl}'")


def described(transcript: Transcript, mismatch: Mismatch | None, trouble: str | None, where: str) -> str:
    """The note's text: the first difference (or why there is none), then the requests up to it, condensed and cut."""
    last = mismatch.step if mismatch is not None else len(transcript.steps)
    shown, repeats = condensed(transcript, last)
    skipped = max(0, len(shown.steps) - SHOWN)
    shown.steps = shown.steps[skipped:]
    shown.released = {i - skipped: r for i, r in shown.released.items() if i >= skipped}
    if mismatch is not None:
        head = f"In the wire protocol, the first answer that differs from the oracle's: {mismatch}"
    else:
        head = f"In the wire protocol: ({trouble})" if trouble else (
            "In the wire protocol, every answer is the oracle's when replayed in a fresh session: what failed is "
            "not in the answers (the message above says what)")
    lines = [
        head,
        'the requests the cache received, each with the oracle\'s answer (docs/PROTOCOL.md "Transcripts")'
        + (f", less {repeats} reads that repeat one made since the last change:" if repeats else ":"),
        *([f"  ... {skipped} requests before these (in the file)"] if skipped else []),
        *(f"  {shorten(line, WIDTH)}" for line in shown.text().splitlines()),
    ]
    if mismatch is not None:
        lines.append(f"  ! the cache answered: {shorten(mismatch.got, WIDTH)}")
        if last < len(transcript.steps):
            lines.append(f"  ... {len(transcript.steps) - last} requests after it (in the file)")
    lines.append(f"All {len(transcript.steps)} requests: {where}")
    return "\n".join(lines)
