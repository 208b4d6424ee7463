"""The vector generator (vectorgen), checked as a program: the committed corpus (ci/vectors) is what it writes in
another process with hash randomisation off (so it is the same from one process to the next), every vector is flagged
and named as NOTES.md and a replayer expect, each family writes vectors, and a Script records the oracle's answers
(tests/test_vectors.py replays the corpus against the port).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.chunks import seed_token
from testkit.locate import vector_files as vector_paths
from testkit.locate import vectors_dir
from vectorgen import cli
from vectorgen.corpus import assemble, header
from vectorgen.flags import FLAGS, NEEDS
from vectorgen.script import Script

# family module name -> each of its vectors' files (name -> text), written once for the module
Parts = dict[str, list[dict[str, str]]]


# Every family's vectors (vectorgen.corpus.vector_files of each of its makers), as JSON on standard output.
GENERATE = """import json, sys
from vectorgen.corpus import FAMILIES, vector_files
json.dump({family.__name__: [vector_files(make) for make in family.VECTORS] for family in FAMILIES}, sys.stdout)
"""
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def parts() -> Parts:
    """The generator's output, written once (it is the slow part) by another process with hash randomisation off
    (PYTHONHASHSEED=0); the committed corpus was written by a process with its own seed, so set or dict order
    leaking into a vector would differ from it (test_the_corpus_is_what_the_generator_writes)."""
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    run = subprocess.run([sys.executable, "-c", GENERATE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": path})
    assert run.returncode == 0, run.stderr
    generated: Parts = json.loads(run.stdout)
    return generated


@pytest.fixture(scope="module")
def files(parts: Parts) -> dict[str, str]:
    return assemble(part for family in parts.values() for part in family)


def test_the_corpus_is_what_the_generator_writes(files: dict[str, str], tmp_path: Path) -> None:
    """ci/vectors holds exactly what the generator writes, and what `write` puts in a folder `check` accepts."""
    assert vector_paths(), "ci/vectors has no vectors"
    assert cli.check(vectors_dir(), files) == 0, "ci/vectors differs from the generator (the lines above name the files)"
    cli.write(tmp_path, files)
    assert cli.check(tmp_path, files) == 0


def test_every_family_writes_vectors(parts: Parts) -> None:
    empty = [name for name, family in parts.items() if not family]
    assert not empty, f"families with no vectors: {empty}"


def test_every_flag_is_explained(files: dict[str, str]) -> None:
    unexplained = {name: flag for name, text in files.items() if name != "NOTES.md" for flag in header(text)["flags"].split() if flag not in FLAGS}
    assert not unexplained, f"flags not in FLAGS: {unexplained}"


def test_ids_are_unique_and_name_the_files(parts: Parts) -> None:
    seen: dict[str, str] = {}
    for family, vectors in parts.items():
        for part in vectors:
            ids = {header(text)["id"] for text in part.values()}
            assert len(ids) == 1, f"{family}: one vector's files carry the ids {sorted(ids)}"
            vid = ids.pop()
            assert vid not in seen, f"{vid}: written by {seen[vid]} and by {family}"
            seen[vid] = family
            for name, text in part.items():
                profile = header(text).get("profile")
                stem, _, options = name.removesuffix(".txt").partition("--")
                assert stem == vid, f"{name} holds the vector {vid}"
                if options:
                    assert profile is not None and set(options.split(",")) <= set(profile.split(",")), f"{name}: profile {profile}"


def test_notes_list_every_file_once(files: dict[str, str]) -> None:
    table = files["NOTES.md"].split("| id | flags | comment |\n| --- | --- | --- |\n", 1)[1]
    listed = [row.split(" | ")[0].removeprefix("| ") for row in table.splitlines()]
    headers = [header(text) for name, text in files.items() if name != "NOTES.md"]
    expected = [h["id"] + (f" (profile {h['profile']})" if "profile" in h else "") for h in headers]
    assert listed == expected


def test_a_script_records_the_oracles_answers() -> None:
    # The seed's first token (K = [0.5, 0], V = [-0.5, -0]: float16 bits 3800 0000, b800 8000) into
    # a pool of 4 blocks of 2 positions, then the refused free of an id never added.
    s = Script("example", "hand-checked", "seed-example")
    c = s.new(4, 2, 1, 1, 2)
    c.add_seq(0)
    c.append(0, 0, *seed_token(0, "float16"))
    s.observe(c, [0])
    s.attempt(c.free, 9)
    assert s.transcript().steps == [
        ("new 4 2 1 1 2", "ok 0"),
        ("add_seq 0 0", "ok 0"),
        ("append 0 0 0 1,1,2 1,1,2 38000000 b8008000", "ok"),
        ("stats 0", "ok free=3 used=1 cached=0 evictions=0"),
        ("num_free_blocks 0", "ok 3"),
        ("block_table 0 0", "ok 0"),
        ("seq_len 0 0 0", "ok 1"),
        ("gather 0 0 0", "ok 1 38000000 b8008000"),
        ("free 0 9", "err unknown_sequence 9"),
    ]
    assert s.transcript().meta == {"id": "example", "comment": "hand-checked", "flags": "seed-example"}


def test_a_vector_requires_the_capabilities_its_flags_name(files: dict[str, str]) -> None:
    """The flag of an optional part (NEEDS) puts its capability in `# requires:`, and no other flag does: a
    port without it skips the vector with that reason, one with it replays it."""
    for name, text in files.items():
        if name == "NOTES.md":
            continue
        flags = header(text)["flags"].split()
        requires = next((line[len("# requires: "):].split() for line in text.splitlines() if line.startswith("# requires: ")), [])
        assert requires == sorted(NEEDS[f] for f in flags if f in NEEDS), name
        assert name.startswith("page-tables-") == ("page-tables" in flags), name
        if "page-tables" in flags:
            continue  # the page tables' vectors also check them with a window, hybrid groups: their flags, no file prefix
        assert name.startswith(("window-", "range-window-")) == ("sliding-window" in flags), name
        assert name.startswith(("hybrid-", "range-hybrid-")) == ("hybrid" in flags), name
    s = Script("w", "a window", "sliding-window prefix-caching")
    s.new(4, 2, 1, 1, 1, prefix_caching=True, sliding_window=3)
    s.new(4, 2, 1, 1, 1, sliding_window=2)
    transcript = s.transcript()
    assert transcript.requires == ["prefix_caching", "sliding_window"]
    assert [r for r, _ in transcript.steps] == ["new 4 2 1 1 1 prefix_caching sliding_window=3", "new 4 2 1 1 1 sliding_window=2"]
    assert [w for _, w in transcript.steps] == ["ok 0", "ok 1"]


def test_a_script_refuses_what_it_cannot_write() -> None:
    with pytest.raises(AssertionError, match="not explained in FLAGS"):
        Script("bad", "an unknown flag", "seed-example no-such-flag")
    s = Script("ok", "a call expected to fail that succeeds", "error-table")
    c = s.new(4, 2, 1, 1, 1)
    with pytest.raises(AssertionError, match="expected to fail"):
        s.attempt(c.add_seq, 0)


def test_check_names_what_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"a.txt": "1\n", "NOTES.md": "n\n"}
    cli.write(tmp_path, files)
    assert cli.check(tmp_path, files) == 0
    (tmp_path / "a.txt").write_text("2\n")
    (tmp_path / "b.txt").write_text("stale\n")
    assert cli.check(tmp_path, files) == 1
    out = capsys.readouterr().out
    assert "differs from the generator: ci/vectors/a.txt" in out and "not written by the generator: ci/vectors/b.txt" in out
    cli.write(tmp_path, files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["NOTES.md", "a.txt"] and cli.check(tmp_path, files) == 0
