"""The build hook for the wheel: a copy of the verification suite goes inside the package, so that
`pip install <this repository>` gives a `paged-gate` that runs from any folder.

The configuration is pyproject.toml's; this file only extends build_py. SUITE is what the suite
needs of the checkout, copied into `testkit/_suite/` (the part the gate and the suite share) with the checkout's layout (the tests find
ci/vectors, ci/examples (the free-queue example) and the engines' adapters, the package engines, beside tests/, and pytest reads the copied
pyproject.toml), where testkit.locate finds it. An editable install copies nothing: the checkout is the suite.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SUITE = ("pyproject.toml", "tests", "ci/vectors", "ci/bench", "bench", "ci/examples", "engines")
# ci/examples/rust: the Rust port, built by cargo, run from a checkout
LEFT_OUT = ("__pycache__", "*.pyc", "rust", ".hypothesis", ".pytest_cache")


class BuildWithSuite(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "testkit" / "_suite"
        shutil.rmtree(target, ignore_errors=True)
        for name in SUITE:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, target / name, ignore=shutil.ignore_patterns(*LEFT_OUT))
            else:
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)


setup(cmdclass={"build_py": BuildWithSuite})
