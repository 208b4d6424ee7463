"""Write the conformance vectors: `ci/vectors/*.txt`, transcripts with the oracle's answers.

    ci/vectors/generate           # (re)write the corpus
    ci/vectors/generate --check   # exit 1 if the committed corpus differs from what this writes

(`python -m vectorgen` is the same, on the suite's ci/vectors: the checkout's, or the copy
an installed gate ships.) Each vector is a scripted session of calls on the oracle
(`oracle.as_impl`), recorded as wire requests (`wire.record`) with the answers the oracle gives: a
port replays them with its own test runner (docs/PROTOCOL.md "Transcripts"), or with
`ci/gate --vectors`. Every vector has an id, a comment and flags, in the manner of Wycheproof's
test vectors; the flags are explained in NOTES.md beside them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from testkit.locate import vectors_dir
from vectorgen.corpus import corpus


def check(folder: Path, files: dict[str, str]) -> int:
    """0 if `folder` holds exactly `files` (its *.txt and *.md), else 1, naming what differs."""
    present = {p.name for p in folder.iterdir() if p.suffix in (".txt", ".md")}
    stale = sorted(n for n, text in files.items() if not (folder / n).is_file() or (folder / n).read_text() != text)
    extra = sorted(present - set(files))
    for name in stale:
        print(f"differs from the generator: ci/vectors/{name}")
    for name in extra:
        print(f"not written by the generator: ci/vectors/{name}")
    if stale or extra:
        print("run ci/vectors/generate and commit the result")
        return 1
    print(f"ci/vectors: {len(files) - 1} vectors, as the generator writes them")
    return 0


def write(folder: Path, files: dict[str, str]) -> None:
    """Make `folder`'s *.txt and *.md exactly `files`: the stale ones rewritten, the others removed."""
    for path in folder.iterdir():
        if path.suffix in (".txt", ".md") and path.name not in files:
            path.unlink()
    for name, text in files.items():
        (folder / name).write_text(text)
    size = sum(len(t) for t in files.values())
    print(f"ci/vectors: wrote {len(files) - 1} vectors and NOTES.md, {size / 1e6:.2f} MB")


def main(argv: list[str] | None = None, folder: Path | None = None) -> int:
    """The command: write the corpus into `folder` (default: the suite's ci/vectors), or --check it."""
    parser = argparse.ArgumentParser(prog="ci/vectors/generate", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed corpus differs from what this writes")
    args = parser.parse_args(argv)
    folder = folder if folder is not None else vectors_dir()
    files = corpus()
    if args.check:
        return check(folder, files)
    write(folder, files)
    return 0
