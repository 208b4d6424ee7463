"""The bounded exhaustive explorer (explorer/) as a gate step: every short sequence of calls on tiny
pools (each claim printed for what was walked, docs/EXHAUSTIVE.md), and a failure's sequence as a transcript."""

from __future__ import annotations

from pathlib import Path

from testkit.config import Config

from paged_gate.verdict import Case


def explored(
    config: Config, depth: int, transcript_out: Path, time_limit: float | None, quick: bool = False, also_renamed: bool = False
) -> tuple[bool, str, Path | None, list[Case], dict[str, int]]:
    """(passed, the verdict's lines, the failure's transcript or None, one case a geometry, the geometries walked
    whole without a failure by name, with the depth: `testkit.covered`); the lines start
    with the parts of the contract the geometries walked (`base contract, prefix caching, sliding window
    (W=2, 3)`: a part the port does not announce has no geometry walked). `config.impl` is walked under
    `config.profile`; a failure's replay waits `config.driver_timeout` seconds for each answer (PAGED_DRIVER_TIMEOUT). `quick`: only the geometries
    the whole gate's depth-3 step walks (`Geometry.quick`). `also_renamed` (--also-renamed): every table also checked
    up to a renaming of block ids, allocation=any's check (`explorer.table_checks`)."""
    import explorer

    impl = config.implementation
    transcript_out.unlink(missing_ok=True)
    geometries = [g for g in explorer.EVERY_GEOMETRY if g.quick or not quick]
    results = explorer.run(
        impl, depth, geometries, profile=config.profile, time_limit=time_limit, also_renamed=also_renamed,
        progress=lambda g, level: print(
            f"  {g}: depth {level.depth}: {level.states:,} states, {level.sequences:,} sequences, {level.transitions:,} calls, {level.seconds:.1f} s", flush=True
        ),
    )
    ok, lines = explorer.report(results, impl, str(transcript_out), config.driver_timeout)
    cases = [
        Case(
            "exhaustive", str(r.geometry), r.seconds,
            failure=None if r.failure is None else f"after {r.failure.calls} calls: {r.failure.what}",
            skipped=(r.stopped or None) if not r.states else None,
        )
        for r in results
    ]
    whole = {r.geometry.name: r.depth for r in results if r.failure is None and not r.stopped and r.states}
    return ok, "\n      ".join([explorer.walked(results), *lines]), transcript_out.resolve() if transcript_out.exists() else None, cases, whole
