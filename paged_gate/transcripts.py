"""Transcripts (docs/PROTOCOL.md, "Transcripts"): replaying them against the implementation under
test (the conformance vectors, `--replay FILE`), and the one a failing gate leaves at its named
place (`--transcript-out`, else a new temporary folder) for the port author to replay."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from oracle.profile import Profile
from wire.process import DEFAULT_TIMEOUT, DriverError
from wire.replay import Replayer, replay_fresh
from wire.codec import ProtocolError
from wire.target import Impl
from wire.transcript import OTHER_PROFILE, Transcript, read

from paged_gate.verdict import Case


def explain(path: Path, impl: Impl, profile: Profile, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """Replay a transcript against impl: the first answer that differs, or that none does."""
    try:
        transcript = read(path)
    except (OSError, ProtocolError) as exc:
        return [f"  (could not replay {path}: {exc})"]
    try:
        mismatch, _ = replay_fresh(transcript, impl, profile, timeout)
    except DriverError as exc:
        return [f"  (could not replay {path}: {exc})"]
    if mismatch is None:
        return ["  replayed, every answer matches the oracle's: the failure is in what the wire cannot show (see its message)"]
    return ["  the first answer that differs, replaying it:", f"    {mismatch}"]


def replay_one(path: Path, replayer: Replayer, profile: Profile) -> Case:
    """One transcript, as in a fresh session (`Replayer`): a case that failed (with the first answer that
    differs, or the driver's fault), was skipped (a capability or profile value it was not written for)
    or passed."""
    start = time.monotonic()
    transcript: Transcript = read(path)
    case = Case("vectors", path.stem)  # a vector's id names several files, one for each profile value it is written for
    case.requires = frozenset(transcript.requires)
    try:
        mismatch, case.skipped = replayer.replay(transcript, profile)
    except DriverError as exc:
        case.failure = str(exc)
    else:
        if mismatch is not None:
            meta = transcript.meta
            case.failure = f"{meta.get('comment', '')} [{meta.get('flags', '')}]\n{mismatch}"
    case.seconds = time.monotonic() - start
    return case


def replay_files(
    impl: Impl, paths: list[Path], profile: Profile, stop_at_first: bool = False, timeout: float = DEFAULT_TIMEOUT
) -> tuple[bool, str, list[Case]]:
    """Replay transcripts, each as in a fresh session: (every one matched, the verdict's lines listing each
    that differs, one case a transcript replayed). An unreadable transcript is a failed case. With
    stop_at_first, the first that differs ends the replay. A pass needs every file replayed or skipped
    for a reason it names, and at least one replayed."""
    cases: list[Case] = []
    replayer = Replayer(impl, timeout)
    try:
        for path in paths:
            try:
                cases.append(replay_one(path, replayer, profile))
            except (OSError, ProtocolError) as exc:
                cases.append(Case("vectors", path.stem, failure=f"cannot read {path}: {exc}"))
            if stop_at_first and cases[-1].failure is not None:
                break
    finally:
        replayer.stop()
    failed = [c for c in cases if c.failure is not None]
    skipped = [c for c in cases if c.skipped is not None]
    others = [c for c in skipped if c.skipped and c.skipped.startswith(OTHER_PROFILE)]
    matched = len(cases) - len(failed) - len(skipped)
    lines = [
        f"{matched} of {len(paths)} transcripts match, {len(failed)} differ, {len(skipped)} skipped"
        f" ({len(others)} written for other profile values)"
    ]
    if len(cases) < len(paths):
        lines[0] += f"; stopped at the first that differs, {len(paths) - len(cases)} not replayed (--all-failures replays them all)"
    elif not failed and not matched:
        lines[0] += ": nothing was replayed, so nothing is certified"
    for case in cases:
        if case.skipped is not None and case not in others:
            lines.append(f"  skipped {case.name}: {case.skipped}")
        elif case.failure is not None:
            first, _, rest = case.failure.partition("\n")
            lines.append(f"  FAILED {case.name}: {first}" + (f"\n    {rest}" if rest else ""))
    return not failed and matched > 0 and len(cases) == len(paths), "\n".join(lines), cases


def keep(source: Path, out: Path) -> Path:
    """Copy a transcript (a failing vector, say) to the gate's named place, and return that place."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if source.resolve() != out.resolve():
        shutil.copyfile(source, out)
    return out.resolve()
