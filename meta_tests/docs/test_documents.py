"""The repository's documents, checked against the repository: every relative link and backquoted
path names a file or folder it holds (but a short list of paths that are the reader's own, each with
its reason); every count of the tree a document states (lines, files, modules, mutants, vectors,
words, tests...) is one this module computes and compares with the tree, the vector counts from
ci/vectors and the defaults of the PAGED_* settings from the code that reads them; every range of
mutant ids names planted mutants; and the Markdown a person writes stays within its word budget.

A figure no test can check (a time, a count of tests passed) is given only as a dated record, with
its host, command and date or commit, or not at all.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.profile import Profile
from testkit.config import DEFAULTS
from wire.transcript import read, written_for_another

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / ".git").exists() or not (ROOT / "docs" / "CONTRACT.md").is_file():
    pytest.skip("the documents are checked in a git checkout; this copy of the suite is not one (an installed gate, "
                "a planted mutant's copy)", allow_module_level=True)

# Markdown a program writes, each with its writer: checked for links and paths, but neither written
# by hand nor counted in the word budget (their figures are the generator's, checked by its own tests).
GENERATED = {
    "ci/vectors/NOTES.md": "ci/vectors/generate (vectorgen/corpus.py), checked against the corpus by meta_tests/vectorgen/test_generator.py",
}

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
DOCUMENTS = [ROOT / p for p in TRACKED if p.endswith(".md")]
WRITTEN = [d for d in DOCUMENTS if d.relative_to(ROOT).as_posix() not in GENERATED]


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


# -- counts of the tree, and ranges of mutant ids -----------------------------------------------------

NUMBER_WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()
COUNTED = "lines|files|modules|mutants|vectors|transcripts|words|tests|ports|adapters|geometries|machines|plugins|pitfalls|kernels"
COUNT = re.compile(rf"(?<![\d.,])\b(\d{{1,3}}(?:,\d{{3}})+|\d+|{'|'.join(NUMBER_WORDS)})(?! ?[,.]\d)((?: [\w'-]+){{0,2}}?) ({COUNTED})\b", re.I)


def number(word: str) -> int:
    return NUMBER_WORDS.index(word.lower()) + 1 if word.isalpha() else int(word.replace(",", ""))


def modules_beside(doc: Path) -> int:
    """The Python modules in a document's own folder, `__init__.py` aside."""
    return len([m for m in doc.parent.glob("*.py") if m.name != "__init__.py"])


# Every count of the tree a written document states, as (pattern over the words of the count, the
# tree's figure). A count that none of these patterns matches fails
# test_every_count_of_the_tree_is_checked: check it here, or say it without the number.
CHECKED_COUNTS: list[tuple[str, Callable[[Path], int | tuple[int, ...]]]] = [
    (r"(\d+) of (\d+) vectors", lambda doc: vector_counts()),
    (r"(\w+) small modules", modules_beside),
    (r"(\w+) OpenBLAS kernels", lambda doc: blas_kernels()),
]


def blas_kernels() -> int:
    """The OpenBLAS kernels ci/blas-kernels runs the float-sensitive tests under (its `kernels=(...)`, "" the default)."""
    found = re.search(r"^kernels=\((.*)\)$", (ROOT / "ci" / "blas-kernels").read_text(), flags=re.M)
    assert found, "ci/blas-kernels has no kernels=(...) line"
    return len(re.findall(r'"[^"]*"|\S+', found.group(1)))


def counts(doc: Path) -> list[tuple[str, int]]:
    """Each count of the tree the prose of `doc` states: (its words, its number)."""
    paragraphs = re.split(r"\n(?:[ \t]*\n|(?=#))", prose(doc))  # a count never runs across a paragraph or heading
    return [(m.group(0), number(m.group(1))) for p in paragraphs for m in COUNT.finditer(re.sub(r"\s+", " ", p))]


def count_columns(doc: Path) -> list[str]:
    """The header cells of `doc`'s tables that head a column of counts of the tree (`| lines |`)."""
    heads = re.findall(r"^(\|.*\|)\n\|[ :-]+\|", prose(doc), flags=re.M)
    return [cell.strip() for head in heads for cell in head.strip("|").split("|")
            if re.fullmatch(rf"(?:{COUNTED})", cell.strip(), re.I)]


def test_every_count_of_the_tree_is_checked() -> None:
    """Each count a written document states (`N lines`, `six modules`, `N of M vectors`) is matched by
    one of CHECKED_COUNTS and equals the tree's figure; a count nothing checks is stale in waiting."""
    seen, wrong = 0, []
    for doc in WRITTEN:
        for words, _ in counts(doc):
            checks = [(pattern, figure) for pattern, figure in CHECKED_COUNTS if re.fullmatch(pattern, words, re.I)]
            where = f"{doc.relative_to(ROOT)}: '{words}'"
            if not checks:
                wrong.append(f"{where}, but no test checks it (CHECKED_COUNTS): check it, or drop the number")
                continue
            seen += 1
            pattern, figure = checks[0]
            found = re.fullmatch(pattern, words, re.I)
            stated = tuple(number(g) for g in found.groups()) if found else ()
            tree = figure(doc)
            want = tree if isinstance(tree, tuple) else (tree,)
            if stated != want:
                wrong.append(f"{where}={stated}, but should be {want}, the tree's figure")
        wrong += [f"{doc.relative_to(ROOT)}: a table's column '{c}', but no test checks its counts: drop it"
                  for c in count_columns(doc)]
    assert seen, "no document states a count of the tree: this test checks nothing"
    assert not wrong, "\n".join(wrong)


def test_the_count_check_can_fail(tmp_path: Path) -> None:
    """The scanner finds counts in prose (not in code), reads number words, and leaves measures alone."""
    doc = tmp_path / "X.md"
    doc.write_text("It has 1,063 lines and six small modules, 139 of 256\n  vectors.\n```\n12 files\n```\n"
                   "A 4-token prompt, 2.5 tests, score=402/406, a shortest one\n\n## Geometries\n")
    assert [n for _, n in counts(doc)] == [1063, 6, 139]
    doc.write_text("| folder | lines |\n| --- | ---: |\n| `paged/` | 821 |\n")
    assert count_columns(doc) == ["lines"]
    assert modules_beside(ROOT / "docs" / "LAYOUT.md") == 0


MUTANT_ID = re.compile(r"\b([srvwthn])(\d\d)\.\.\1?(\d\d)\b")


def planted() -> set[str]:
    """Every planted mutant's id, from its file's name (`s07_...py`, `rust/r31_...py`, `engines/v01_...py`)."""
    files = [*(ROOT / "mutants").glob("*.py"), *(ROOT / "mutants").glob("*/*.py")]
    return {m.group(1) for f in files if (m := re.match(r"([srvwthn]\d\d)_", f.name))}


def test_every_range_of_mutant_ids_names_planted_mutants() -> None:
    """`s37..s51`, `r01..r57`: every id in a range a document names is a planted mutant's."""
    ids, seen, wrong = planted(), 0, []
    assert {"s01", "r01", "v01", "n01"} <= ids, f"the planted mutants were not found: {sorted(ids)[:5]}"
    for doc in WRITTEN:
        for m in MUTANT_ID.finditer(doc.read_text()):
            seen += 1
            missing = [f"{m.group(1)}{i:02}" for i in range(int(m.group(2)), int(m.group(3)) + 1)
                       if f"{m.group(1)}{i:02}" not in ids]
            if missing:
                wrong.append(f"{doc.relative_to(ROOT)}: '{m.group(0)}', but no mutant {', '.join(missing)} is planted")
    assert seen, "no document names a range of mutants: this test checks nothing"
    assert not wrong, "\n".join(wrong)


def test_the_range_check_can_fail() -> None:
    """A range past the planted mutants names ids that are not planted; the mutants' own ids are."""
    ids = planted()
    m = MUTANT_ID.search("the window's s52..s59 and r01..r02")
    assert m and m.group(0) == "s52..s59" and "s52" not in ids and {"r01", "r02"} <= ids


def test_mutants_readme_lists_every_planted_mutant_of_paged() -> None:
    """mutants/README.md's tables name each sNN file of mutants/ in a row's first cell, and no other."""
    first_cells = re.findall(r"^\| ([^|]*) \|", (ROOT / "mutants" / "README.md").read_text(), flags=re.M)
    rows = {i for cell in first_cells for i in re.findall(r"\bs\d\d\b", cell)}
    files = {i for i in planted() if i.startswith("s")}
    assert rows == files, f"rows={sorted(rows - files)} extra, {sorted(files - rows)} missing, but should be the sNN files"


# -- the word budget ------------------------------------------------------------------------------

BUDGET = {"all": 30_000, "engines/README.md": 3_000, "README.md": 1_800}  # issue 50: docs short enough to stay true


def words(doc: Path) -> int:
    """Words as `wc -w` counts them: runs of characters between whitespace, code blocks included."""
    return len(doc.read_text().split())


def test_the_written_markdown_stays_within_its_word_budget() -> None:
    """All Markdown but GENERATED, and the two pages a newcomer reads first, within their budgets."""
    assert GENERATED.keys() <= {d.relative_to(ROOT).as_posix() for d in DOCUMENTS}, "a generated file is not tracked"
    count = {d.relative_to(ROOT).as_posix(): words(d) for d in WRITTEN}
    over = [f"{name}: words={count[name]:,}, but should be at most {limit:,}" for name, limit in BUDGET.items()
            if name != "all" and count[name] > limit]
    total = sum(count.values())
    if total > BUDGET["all"]:
        largest = ", ".join(f"{n} {w:,}" for n, w in sorted(count.items(), key=lambda kv: -kv[1])[:5])
        over.append(f"all written Markdown: words={total:,}, but should be at most {BUDGET['all']:,} (largest: {largest})")
    assert not over, "\n".join(over)
