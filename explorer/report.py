"""The explorer's verdict: on a pass, what was walked, each claim for what it is; on a failure, the failing
sequence, whether it is a shortest one, its transcript and its replay against the port."""

from __future__ import annotations

from typing import Any, Sequence

from wire.process import DEFAULT_TIMEOUT
from wire.codec import format_layer_windows
from wire.target import Impl

from .alphabet import describe
from .walk import Result

def guarantee(r: Result) -> list[str]:
    """What a walk's levels (each one complete) checked: every sequence of accepted calls within the tree
    depth; every model state within the depth, through one path each; the refused calls from each node;
    with `also_renamed`, every table up to a renaming too."""
    if not r.levels:
        return []
    last = r.levels[-1]
    tree = min(r.tree_depth, last.depth)
    lines = [f"every sequence of <= {tree} calls the model accepts: {last.sequences:,} sequences"]
    nodes = f"each sequence of <= {tree - 1} calls"
    if last.depth > tree:
        renamed = " (block ids up to a renaming)" if r.canonical else ""
        lines.append(f"every model state{renamed} reachable in <= {last.depth} calls, through one path each: {last.states:,} states; "
                     f"every call the model accepts from those within {last.depth - 2}")
        nodes += f" and each state within {last.depth - 1} calls"
    lines.append(f"after {nodes}, every call the model refuses there, one after another, each answer checked, then the state")
    if r.also_renamed:
        lines.append("every table also checked up to a renaming of block ids (allocation=any's check), each time the tables are checked")
    return lines


def walked(results: Sequence[Result]) -> str:
    """The parts of the contract the walk reached, from the geometries it walked at least one depth of:
    `base contract, prefix caching, sliding window (W=2, 3), hybrid models (layer_windows=none,2)`."""
    done = [r.geometry for r in results if r.levels]
    parts = ["base contract"] if done else ["nothing"]
    if any(g.prefix_caching for g in done):
        parts.append("prefix caching")
    windows = sorted({g.sliding_window for g in done if g.sliding_window is not None})
    if windows:
        parts.append(f"sliding window (W={', '.join(map(str, windows))})")
    hybrid = sorted({format_layer_windows(g.layer_windows) for g in done if g.layer_windows is not None})
    if hybrid:
        parts.append(f"hybrid models (layer_windows={'; '.join(hybrid)})")
    return ", ".join(parts)


def summary(results: Sequence[Result]) -> str:
    """The bounded guarantee, a few lines per geometry; nothing claimed past what was walked."""
    lines = []
    for r in results:
        if r.failure:
            lines.append(f"{r.geometry}: FAILS after {r.failure.calls} calls ({r.states:,} states, {r.transitions:,} calls checked, {r.seconds:.1f} s)")
        elif r.stopped and any(x.failure for x in results):
            lines.append(f"{r.geometry}: {r.stopped}")
        elif r.stopped:
            walked = guarantee(r)
            lines.append(f"{r.geometry}: {r.stopped}" + (": agrees with the model on" if walked else ""))
            lines += [f"  {line}" for line in walked]
        else:
            lines.append(f"{r.geometry}: agrees with the model ({r.transitions:,} calls checked, {r.seconds:.1f} s) on")
            lines += [f"  {line}" for line in guarantee(r)]
    return "\n".join(lines)


def shortness(results: Sequence[Result]) -> tuple[str, str]:
    """How the failing sequence is named, and what is known of its length."""
    failed = next(r for r in results if r.failure is not None)
    f = failed.failure
    assert f is not None
    if f.shortest:
        return "shortest failing sequence", "(every sequence of fewer calls the model accepts agrees, on every geometry walked)"
    if not f.single:
        return "failing sequence, not known to be a shortest", "(its refused calls fail one after another, not alone)"
    trees = min(r.tree_depth for r in results)
    return ("failing sequence, not known to be a shortest",
            f"(every sequence of <= {trees} calls the model accepts agrees; beyond, the walk followed one path into each "
            "model state, and a shorter failure may go through another)")


def replay_text(transcript: Any, impl: str | Impl, profile: Any, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Replay a transcript against impl under the profile under test (block tables up to a renaming under
    allocation=any): the requests up to the first answer that differs, and how it differs; or that none does."""
    from wire.process import DriverError
    from wire.replay import Session
    from wire.diff import shorten

    try:
        session = Session(impl, timeout)
    except (DriverError, ImportError) as exc:
        return f"(could not replay: {exc})"
    try:
        mismatch, skipped = session.replay(transcript, profile)
    except DriverError as exc:
        return f"replaying it: {exc}"
    finally:
        session.close()
    if skipped is not None:
        return f"(not replayed: {skipped})"
    if mismatch is None:
        return "replayed, every answer matches the oracle's (the difference is in what the wire cannot show)"
    shown = [f"    > {shorten(request, 100)}\n    < {shorten(want, 100)}" for request, want in transcript.steps[: mismatch.step - 1]]
    shown.append(f"    > {shorten(mismatch.request, 100)}\n    < {shorten(mismatch.got, 100)}   <- the port's answer; the oracle's: {shorten(mismatch.want, 100)}")
    return "replaying it, the requests up to the first answer that differs:\n" + "\n".join(shown) + f"\n  {mismatch}"


def report(results: Sequence[Result], impl: str | Impl, transcript_out: str | None, timeout: float = DEFAULT_TIMEOUT) -> tuple[bool, list[str]]:
    """The verdict's lines: the bounded guarantee on a pass; the failing sequence, its transcript and its
    replay on a failure."""
    lines = summary(results).splitlines()
    lines += [f"  note: {note}" for note in dict.fromkeys(r.note for r in results if r.note)]
    failed = next((r for r in results if r.failure is not None), None)
    if failed is None or failed.failure is None:
        return True, lines
    f = failed.failure
    name, known = shortness(results)
    lines.append(f"  {name} ({f.calls} calls on {f.geometry}): {'; '.join(map(describe, f.path))}")
    lines.append(f"    {known}")
    lines.append(f"  what differs after the last call: {f.what}")
    if f.note:
        lines.append(f"  note: {f.note}")
    transcript = f.transcript(str(impl))
    if transcript_out:
        from pathlib import Path

        Path(transcript_out).write_text(transcript.text(), encoding="ascii", errors="replace")
        lines.append(f"  as a transcript: {transcript_out} ({len(transcript.steps)} requests); replay it: ci/gate --replay {transcript_out} --impl '{impl}'")
    lines.append("  " + replay_text(transcript, impl, f.profile, timeout))
    return False, lines
