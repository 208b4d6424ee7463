"""A mutant's copy of an installed engine, made mostly of symlinks: cheap to make and to delete, whatever its size.

The folders on the way to the files a mutant edits are real folders, and so is each such folder's __pycache__ (its
compiled files linked one by one, so that dropping an edited module's bytecode never touches the original); the edited
files are real copies, which `apply_mutant` then edits. Every other entry is one symlink to the original: a file, or a
whole folder (vLLM has 9,000 files: a link each cost more time than the suite's run on some mutants). Nothing is
ever written through a link: a mutant's run writes no bytecode.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path


def mirror(src: Path, dest: Path, edited: Sequence[str] = ()) -> None:
    """dest: src seen through symlinks, with the files `edited` (paths relative to src) copied into real folders."""
    files = {Path(f) for f in edited}
    real = {Path(".")} | {folder for f in files for folder in f.parents}
    real |= {f.parent / "__pycache__" for f in files if f.suffix == ".py"}
    for folder in sorted(real, key=lambda f: len(f.parts)):
        (dest / folder).mkdir(parents=True, exist_ok=True)
        if not (src / folder).is_dir():
            continue
        for entry in (src / folder).iterdir():
            rel = folder / entry.name
            if rel in real:
                continue
            if rel in files:
                shutil.copy2(entry, dest / rel)
            else:
                os.symlink(entry, dest / rel)
