"""The corpus: every family's vectors as files (a transcript per profile value its answers depend
on), and NOTES.md, which explains the flags and lists every file's id, flags and comment.
"""

from __future__ import annotations

import itertools
from typing import Iterable

from oracle.profile import OPTIONS, Profile
from vectorgen import (
    allocation, errors, float16, geometry, hybrid, hybrid_ranges, hybrid_shapes, page_tables, pitfalls, prefix, protocol,
    random_sessions, ranges, wide_forks, window, window_ranges,
)
from vectorgen.flags import FLAGS
from vectorgen.script import Script, Vector
from wire.transcript import Transcript

# The families, in the order their vectors are written (and listed in NOTES.md).
FAMILIES = (
    pitfalls, errors, protocol, allocation, ranges, wide_forks, random_sessions, prefix, window, window_ranges, hybrid, hybrid_ranges,
    float16, geometry, hybrid_shapes, page_tables,
)

# The profile options whose values change a prefix-caching vector's answers (allocation never does:
# the oracle takes the lowest free block under every profile, and a port's ids are renamed).
PREFIX_OPTIONS = ("reuse", "duplicates", "registration", "freeing")


def vectors() -> list[Vector]:
    """Every family's vectors, in order."""
    return [make for family in FAMILIES for make in family.VECTORS]


def variants(script: Script) -> dict[str, Transcript]:
    """File name -> transcript: one per value of each profile option the answers depend on.

    The answers are the oracle's under each profile; an option they depend on is named, with its
    value, in a `profile` line of each file's header, and a replayer takes the file whose values
    are its port's. The default values' file is `{id}.txt`, the others `{id}--OPTION=VALUE,...txt`.
    """
    vid = script.meta["id"]
    base = script.transcript()
    if "prefix-caching" not in script.meta["flags"].split():
        return {f"{vid}.txt": base}

    def under(values: dict[str, str]) -> Transcript:
        allocation = "any" if values.get("reuse") == "release-order" else "lowest-free"
        return script.transcript(Profile(allocation=allocation, **values))

    depends = [
        option for option in PREFIX_OPTIONS
        if any(under({option: value}).steps != base.steps for value in OPTIONS[option] if value != getattr(Profile(), option))
    ]
    out: dict[str, Transcript] = {}
    for combo in itertools.product(*(OPTIONS[o] for o in depends)):
        values = dict(zip(depends, combo))
        transcript = under(values) if combo else base
        if depends:
            transcript.meta["profile"] = ",".join(f"{o}={v}" for o, v in values.items())
        changed = {o: v for o, v in values.items() if v != getattr(Profile(), o)}
        name = f"{vid}--{','.join(f'{o}={v}' for o, v in changed.items())}.txt" if changed else f"{vid}.txt"
        out[name] = transcript
    return out


def header(text: str) -> dict[str, str]:
    """A transcript's id, comment, flags and profile, from its `# key: value` header lines."""
    pairs = (line[2:].split(": ", 1) for line in text.splitlines() if line.startswith("# ") and ": " in line)
    return {key: value for key, value in pairs if key in ("id", "comment", "flags", "profile")}


def notes(files: dict[str, str]) -> str:
    """NOTES.md: FLAGS explained, then a row per file (its id, profile, flags and comment)."""
    written = "Written by `ci/vectors/generate` (the generator is `vectorgen/`, a module per family of vectors)"
    lines = ["# Conformance vectors: flags", "", f"{written}; each `*.txt` is a transcript (docs/PROTOCOL.md).", ""]
    lines += ["| flag | what the vector checks |", "| --- | --- |"]
    lines += [f"| `{flag}` | {meaning} |" for flag, meaning in FLAGS.items()]
    lines += ["", "| id | flags | comment |", "| --- | --- | --- |"]
    for text in files.values():
        meta = header(text)
        profile = f" (profile {meta['profile']})" if "profile" in meta else ""
        lines.append(f"| {meta['id']}{profile} | {meta['flags']} | {meta['comment']} |")
    return "\n".join(lines) + "\n"


def vector_files(make: Vector) -> dict[str, str]:
    """One vector's files: name -> text (a file per profile value its answers depend on)."""
    return {name: transcript.text() for name, transcript in variants(make()).items()}


def assemble(parts: Iterable[dict[str, str]]) -> dict[str, str]:
    """The vectors' files, in order, plus NOTES.md; refuses two vectors that write the same file."""
    files: dict[str, str] = {}
    for part in parts:
        clash = sorted(files.keys() & part.keys())
        assert not clash, f"duplicate vector id: {clash}"
        files.update(part)
    files["NOTES.md"] = notes(files)
    return files


def corpus() -> dict[str, str]:
    """File name -> text, for every vector (a file per profile value its answers depend on), plus NOTES.md."""
    return assemble(vector_files(make) for make in vectors())
