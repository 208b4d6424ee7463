"""The settings of a run (which implementation, under which profile, with which time limits), as one
typed object built at the edge and passed down.

The edges that read the settings are the gate (`paged-gate`: its supervisor and its worker) and the
suite's pytest plugin (tests/plugins/implementation.py: its options over the environment); the mutant runners only
write settings into the environment of the pytest runs they start. This module is
the only reader of the PAGED_* environment variables: `Config.from_env` reads them once, a profile
parsed there once; a parent hands its settings to a child process with `Config.child_env`, so the
child's `from_env` reads back the same Config.

The profile under test is resolved once into the Config, with where it came from (`profile_source`):
given (--profile, or PAGED_PROFILE), else the one the implementation declares, else the default. Only a
given one is handed to a child (a child may test another implementation, which declares its own); a
profile not given is resolved by `following` once the implementation is reached (the gate's worker, the
suite's harness). The documents give the defaults (docs/GATING.md,
docs/PROTOCOL.md, README.md); meta_tests/docs/test_documents.py checks them against DEFAULTS.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from oracle.profile import Profile
from oracle.profile import parse as parse_profile  # the edge: PAGED_PROFILE's text
from wire.process import DEFAULT_TIMEOUT
from wire.target import Impl, parse

#: The numeric settings' defaults, as the documents give them (meta_tests/docs/test_documents.py checks them).
DEFAULTS: dict[str, float] = {
    "PAGED_DRIVER_TIMEOUT": DEFAULT_TIMEOUT,  # seconds a driver has for each answer (wire.process's own default)
    "PAGED_SHRINK_SECONDS": 20,  # the gate's limit on shrinking one failure (Hypothesis's own is 300 s)
    "PAGED_EXPLORE_SECONDS": 30,  # the gate's explorer run, for a shortest failing sequence
    "PAGED_START_SECONDS": 120,  # to import a module, or start a driver and have its hello
}

# Where the profile under test came from (Config.profile_source), as the gate's `profile:` line names it.
FLAG = "given by --profile"  # the gate's, the suite's or the mutant runners' --profile
ENV = "given by PAGED_PROFILE"  # the environment's (a parent's --profile reaches its children so)
DECLARED = "declared by the implementation"  # a module's PROFILE, a driver's hello
DEFAULT = "the default"  # none given, none declared
PENDING = "the implementation's, not read yet"  # none given: `following` resolves it once the implementation is reached
GIVEN = (FLAG, ENV)


@dataclass(frozen=True)
class Config:
    """What a run is told: every PAGED_* setting, typed.

    `profile` is the profile under test and `profile_source` where it came from (FLAG, ENV, DECLARED,
    DEFAULT, or PENDING until the implementation's declaration is read: `following`); `shrink_seconds` None leaves Hypothesis's own limit (the gate sets one: `gate_shrink_seconds`);
    `engines` runs both engine adapters' tests (PAGED_ENGINES=1), `engine_only` one of them; `announced`
    is what a driver's first session announced at the gate's hello (PAGED_ANNOUNCED, set by the gate), which
    every session the suite starts must announce too; `vectors_dir` is the folder of vectors a port's own
    tests replay (PAGED_VECTORS_DIR, which the Rust port's `cargo test --test vectors` reads; None: its own
    default); `hello_seconds` is how long the gate's first session with a driver waits for each answer,
    its hello among them (within PAGED_START_SECONDS, which bounds the whole reach; not an environment setting)."""

    impl: str = "paged"
    profile: Profile = Profile()
    profile_source: str = PENDING
    shrink_seconds: float | None = None
    explore_seconds: float = DEFAULTS["PAGED_EXPLORE_SECONDS"]
    start_seconds: float = DEFAULTS["PAGED_START_SECONDS"]
    driver_timeout: float = DEFAULTS["PAGED_DRIVER_TIMEOUT"]
    coverage_out: Path | None = None
    engines: bool = False
    engine_only: str | None = None
    announced: str | None = None  # a driver's words at the gate's first hello, which every later session must announce
    vectors_dir: Path | None = None
    hello_seconds: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """The settings the environment gives (os.environ by default); a bad PAGED_PROFILE raises ProfileError."""
        env = os.environ if env is None else env

        def number(name: str) -> float:
            return float(env.get(name) or DEFAULTS[name])

        profile, coverage, vectors = env.get("PAGED_PROFILE"), env.get("PAGED_COVERAGE_OUT"), env.get("PAGED_VECTORS_DIR")
        return cls(
            impl=env.get("PAGED_IMPL") or "paged",
            profile=parse_profile(profile) if profile else Profile(),
            profile_source=ENV if profile else PENDING,
            shrink_seconds=float(env["PAGED_SHRINK_SECONDS"]) if env.get("PAGED_SHRINK_SECONDS") else None,
            explore_seconds=number("PAGED_EXPLORE_SECONDS"),
            start_seconds=number("PAGED_START_SECONDS"),
            driver_timeout=number("PAGED_DRIVER_TIMEOUT"),
            coverage_out=Path(coverage) if coverage else None,
            engines=env.get("PAGED_ENGINES") == "1",
            engine_only=env.get("PAGED_ENGINE_ONLY") or None,
            announced=env.get("PAGED_ANNOUNCED"),
            vectors_dir=Path(vectors) if vectors else None,
        )

    def given(self, profile: Profile) -> Config:
        """This Config under a profile given by --profile (parsed at that edge): it overrides what the implementation declares."""
        return replace(self, profile=profile, profile_source=FLAG)

    def following(self, declared: Profile | None) -> Config:
        """This Config with its profile resolved against what the implementation declares (`oracle.profile.declared`):
        a given or already resolved profile stays; else the declared one, else the default."""
        if self.profile_source != PENDING:
            return self
        return replace(self, profile=declared or Profile(), profile_source=DEFAULT if declared is None else DECLARED)

    @property
    def implementation(self) -> Impl:
        """`impl` taken apart (`wire.target.parse`): a module, or a driver's command."""
        return parse(self.impl)

    @property
    def gate_shrink_seconds(self) -> float:
        """The gate's limit on shrinking one failure: PAGED_SHRINK_SECONDS, else its default."""
        return self.shrink_seconds if self.shrink_seconds is not None else DEFAULTS["PAGED_SHRINK_SECONDS"]

    def child_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a child process that must read back this Config: `base` (os.environ by
        default) with every PAGED_* setting written from it (the unset ones removed). Only a given profile is
        written, in full (`describe`), so that an explicit default profile stays an override; a declared one
        is not (the child reads its own implementation's declaration)."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("PAGED_") or k not in SETTINGS}
        written = {
            "PAGED_IMPL": self.impl,
            "PAGED_PROFILE": self.profile.describe() if self.profile_source in GIVEN else None,
            "PAGED_SHRINK_SECONDS": f"{self.shrink_seconds:g}" if self.shrink_seconds is not None else None,
            "PAGED_EXPLORE_SECONDS": f"{self.explore_seconds:g}",
            "PAGED_START_SECONDS": f"{self.start_seconds:g}",
            "PAGED_DRIVER_TIMEOUT": f"{self.driver_timeout:g}",
            "PAGED_COVERAGE_OUT": str(self.coverage_out) if self.coverage_out is not None else None,
            "PAGED_ENGINES": "1" if self.engines else None,
            "PAGED_ENGINE_ONLY": self.engine_only,
            "PAGED_ANNOUNCED": self.announced,
            "PAGED_VECTORS_DIR": str(self.vectors_dir) if self.vectors_dir is not None else None,
        }
        env.update({k: v for k, v in written.items() if v is not None})
        return env


#: The environment variables a Config reads and writes.
SETTINGS = (
    "PAGED_IMPL", "PAGED_PROFILE", "PAGED_SHRINK_SECONDS", "PAGED_EXPLORE_SECONDS", "PAGED_START_SECONDS",
    "PAGED_DRIVER_TIMEOUT", "PAGED_COVERAGE_OUT", "PAGED_ENGINES", "PAGED_ENGINE_ONLY", "PAGED_ANNOUNCED", "PAGED_VECTORS_DIR",
)

#: pytest's own variables that change which tests run: more arguments (`-k`, a path, `-p no:...`), more plugins,
#: or none of the installed ones (xdist, Hypothesis's). The gate refuses the caller's and hands none on (paged_gate.suite_env).
SELECTING = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
#: The prefixes of the variables pytest and Hypothesis read (the suite's Hypothesis profile: HYPOTHESIS_PROFILE).
WATCHED = ("PYTEST_", "HYPOTHESIS_")
