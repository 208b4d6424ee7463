"""The repository's documents, checked against the repository: every relative link and backquoted
path names a file or folder it holds (but a short list of paths that are the reader's own, each with
its reason), and the figures they give that a test can compute cheaply are today's: the vector
counts from ci/vectors, and the defaults of the PAGED_* settings from the code that reads them.

A figure no test can check (a time, a count of tests) is given only as a dated record, with its
host, command and date or commit, or not at all (docs/GATING.md, "Measured", says so).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

from oracle.profile import Profile
from testkit.config import DEFAULTS
from wire.transcript import read, written_for_another

ROOT = Path(__file__).resolve().parents[1]
if not (ROOT / ".git").exists() or not (ROOT / "docs" / "CONTRACT.md").is_file():
    pytest.skip("the documents are checked in a git checkout; this copy of the suite is not one (an installed gate, "
                "a planted mutant's copy)", allow_module_level=True)

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "mutants" / "README.md",
             ROOT / "ci" / "vectors" / "NOTES.md", ROOT / "ci" / "examples" / "rust" / "README.md", ROOT / "engines" / "README.md"]

# Backquoted paths that name no file of this repository on purpose, each with its reason.
NOT_OURS = {
    "./target/release/driver": "a port's own driver binary, in the port's repository",
    "exec:./target/release/driver": "the same, as the gate's --impl",
    "venv/bin/python": "a port's own virtual environment's interpreter (GATING.md: a driver started through it)",
    "OWNER/paged-kv-cache@COMMIT": "this repository's URL and a commit, as a port's CI pins them",
    "mikepenz/action-junit-report": "a GitHub Action",
    "dorny/test-reporter": "a GitHub Action",
    "gate-*.xml": "JUnit XML the port's CI job writes",
    "transcript.txt": "the file a failing gate writes in a new temporary folder",
    "/tmp": "the host's folder for temporary files, outside any checkout",
    "vllm/v1/core": "a folder of the installed vLLM package",
    "nanovllm/engine/block_manager.py": "a file of the installed nano-vllm-fork package",
    "mutants/paged": "mutmut's copy of paged/, made by a run and git-ignored",
    "mutants/tests": "mutmut's copy, made by a run and git-ignored",
    "mutants/tests/": "mutmut's copy, made by a run and git-ignored",
    "mutants/oracle": "mutmut's copy, made by a run and git-ignored",
    "mutants/pyproject.toml": "mutmut's copy, made by a run and git-ignored",
    "mutants/mutmut-*.json": "mutmut's statistics, made by a run and git-ignored",
    "tests/__init__.py": "named as the file that must not exist (mutants/README.md, mutmut)",
    "./target/release/paged-kv-driver": "the Rust port's driver, built by cargo in ci/examples/rust",
    "gate-xfails.txt": "a port's own list of expected failures",
    "out.json": "the JSON file the reader asks ci/bench to write",
    "@ids.txt": "the list of test ids the reader writes (docs/PERFORMANCE.md)",
}
PLACEHOLDERS = {"NAME": "*", "OPTION": "*", "VALUE": "*", "ADAPTER": "*"}  # whole words; and NN, two digits
EXTENSION = re.compile(r"\.(py|md|rs|txt|toml|json|png|ya?ml|xfails|lock|cfg|sh|xml)$")


def tracked() -> list[str]:
    """The repository's files and folders (git's list), as paths relative to its root."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {str(Path(f).parents[i]) + "/" for f in out for i in range(len(Path(f).parents) - 1)}
    return sorted(set(out) | folders)


TRACKED = tracked()


def prose(doc: Path) -> str:
    """A document without its fenced code blocks (commands and their output, checked by running them)."""
    return re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.S | re.M)


def links(doc: Path) -> list[str]:
    return [m.group(1) for m in re.finditer(r"\]\(([^)\s]+)\)", prose(doc)) if not re.match(r"[a-z]+:", m.group(1))]


def backquoted_paths(doc: Path) -> list[str]:
    """Every word of a backquoted span that looks like a path: it has a `/` or a file's extension
    (`VAR=` assignments, options and an `exec:` prefix stripped; `score=K/T` is no path)."""
    found = []
    for span in re.findall(r"`([^`\n]+)`", prose(doc)):
        for word in span.split():
            word = word.strip("'\"()[],;").removeprefix("exec:")
            if re.match(r"[A-Z_]+=", word):
                word = word.split("=", 1)[1]
            if word.startswith("-") or "=" in word or "://" in word or not word:
                continue
            word = re.sub(r"::.*$|:\d+$", "", word)  # a test's node id, a line number
            if ("/" in word and re.search(r"[a-z0-9]", word)) or EXTENSION.search(word):  # not `K/N`
                found.append(word)
    return found


def exists(path: str, doc: Path) -> bool:
    """Whether the repository holds `path`: from its root, from the document's folder, or as the end of
    a path it holds (`src/wire.rs`, `machines/`); `*` and placeholders (`NN`, `NAME`) match as globs."""
    if path in NOT_OURS:
        return True
    for base in (ROOT, doc.parent):
        here = (base / path).resolve()
        if here.exists() and ROOT in (here, *here.parents):
            return True
    pattern = path.removeprefix("./")
    for word, glob in PLACEHOLDERS.items():
        pattern = re.sub(rf"(?<![A-Za-z]){word}(?![A-Za-z])", glob, pattern)
    pattern = pattern.replace("NN", "[0-9][0-9]")
    if pattern.endswith("/"):
        candidates = [p for p in TRACKED if p.endswith("/")]
    else:
        candidates = [p.removesuffix("/") for p in TRACKED]
    return any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, "*/" + pattern) for p in candidates)


def anchors(doc: Path) -> set[str]:
    """GitHub's anchors of a document's headings."""
    heads = re.findall(r"^#+ (.+)$", prose(doc), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_link_and_path_names_what_the_repository_holds(doc: Path) -> None:
    missing = []
    for link in links(doc):
        target, _, anchor = link.partition("#")
        file = (doc.parent / target).resolve() if target else doc
        if not file.exists():
            missing.append(f"link ({link}): no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            missing.append(f"link ({link}): no heading with that anchor")
    missing += [f"`{p}`: no such file or folder in the repository" for p in backquoted_paths(doc) if not exists(p, doc)]
    assert not missing, f"{doc.relative_to(ROOT)} names what the repository does not hold:\n  " + "\n  ".join(missing)


def test_the_path_check_can_fail() -> None:
    """The check above, on names the repository does not hold (a document cited beside another, a typo)."""
    doc = ROOT / "docs" / "CONTRACT.md"
    assert exists("docs/PROTOCOL.md", doc) and exists("src/wire.rs", doc) and exists("mutants/engines/vNN_*.py", doc)
    assert not exists("seed.md", doc) and not exists("docs/PROTOCOL.txt", doc) and not exists("../shared/ENGINES.md", doc)
    assert backquoted_paths(ROOT / "README.md"), "the README's paths were found"


# -- figures ----------------------------------------------------------------------------------------


def vector_counts() -> tuple[int, int]:
    """(files a port of the default reuse and duplicates values replays, every vector file), from ci/vectors,
    by the rule the gate skips the others by (`written_for_another`)."""
    files = sorted((ROOT / "ci" / "vectors").glob("*.txt"))
    mine = sum(1 for f in files if written_for_another(read(f), Profile()) is None)
    return mine, len(files)


def test_the_vector_counts_in_the_documents_are_the_corpus() -> None:
    """Every `N of M vectors` (or transcripts) and `K written for other profile values` is today's."""
    mine, total = vector_counts()
    seen, wrong = 0, []
    for doc in DOCUMENTS:
        text = doc.read_text()
        for m in re.finditer(r"\b(\d+) of (\d+) (?:vectors|transcripts)\b", text):
            seen += 1
            if (int(m.group(1)), int(m.group(2))) != (mine, total):
                wrong.append(f"{doc.relative_to(ROOT)}: '{m.group(0)}', but ci/vectors has {mine} of {total}")
        for m in re.finditer(r"\b(\d+) (?:more are )?written for other profile values", text):
            seen += 1
            if int(m.group(1)) != total - mine:
                wrong.append(f"{doc.relative_to(ROOT)}: '{m.group(0)}', but ci/vectors has {total - mine}")
    assert seen, "no document gives the vector counts: this test checks nothing"
    assert not wrong, "\n".join(wrong)


def defaults() -> dict[str, str]:
    """Each PAGED_* setting's default, as the code that reads it has it: testkit/config.py, the only reader
    of PAGED_* (its DEFAULTS), and nowhere else in the code a `getenv`/`environ` read of PAGED_*."""
    read = re.compile(r'(?:environ\.get|getenv)\(\s*"PAGED_|environ\["PAGED_[A-Z_]+"\](?!\s*=[^=])')
    readers = [
        source.relative_to(ROOT).as_posix()
        for folder in ("paged", "oracle", "wire", "testkit", "paged_gate", "tests", "meta_tests", "mutants", "engines", "bench")
        for source in (ROOT / folder).rglob("*.py")
        if read.search(source.read_text())
    ]
    assert [r for r in readers if r != "testkit/config.py"] == [], f"PAGED_* read outside testkit/config.py: {readers}"
    return {name: f"{value:g}" for name, value in DEFAULTS.items()}


def test_the_settings_defaults_in_the_documents_are_the_codes() -> None:
    """`PAGED_X` (N) or `PAGED_X`, N s in a document: N is the default the code reads it with."""
    code = defaults()
    assert {"PAGED_DRIVER_TIMEOUT", "PAGED_SHRINK_SECONDS", "PAGED_EXPLORE_SECONDS"} <= code.keys()
    seen, wrong = 0, []
    for doc in DOCUMENTS:
        for name, value in re.findall(r"`?(PAGED_[A-Z_]+)`?(?:\s*\(|,\s*)(\d+)\b", doc.read_text()):
            if name in code:
                seen += 1
                if float(value) != float(code[name]):
                    wrong.append(f"{doc.relative_to(ROOT)}: {name} {value}, but the code's default is {code[name]}")
    assert seen, "no document gives a setting's default: this test checks nothing"
    assert not wrong, "\n".join(wrong)
