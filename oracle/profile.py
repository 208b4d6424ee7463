"""Profiles: the choices CONTRACT.md leaves to a port, each with named values (docs/CONTRACT.md "Profiles").

A profile is written `OPTION=VALUE[,OPTION=VALUE...]`; an option not named takes its default
(the first value below), so the empty string is the default profile, the one the vectors are
written in. A port declares its profile (a module's `PROFILE` attribute, a driver's `hello`
answer), and the suite follows it: the oracle takes the same choices, and under
`allocation=any` block tables are compared up to a renaming of block ids (`oracle.id_renaming`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

# option -> its values, the default first, each with the engine it models
OPTIONS: dict[str, dict[str, str]] = {
    "allocation": {
        "lowest-free": "every block taken is the lowest-numbered free one (this project); tables compared exactly",
        "any": "any free block (vLLM's free queue, nano-vllm's deque, a Vec used as a stack); tables compared up to a renaming of ids",
    },
    "reuse": {
        "free-first": "prefix caching: a free block if there is one, else the block cached longest ago is evicted (vLLM)",
        "release-order": "prefix caching: one queue of every block with no holder, cached or not, in release order; the front is taken (nano-vllm)",
    },
    "duplicates": {
        "first": "prefix caching: a key names one block; a second block filled under it stays unregistered",
        "keep": "prefix caching: the second block is registered too; a hit takes the earliest still registered (vLLM)",
        "newest": "prefix caching: the key moves to the newest block; the old one loses it (nano-vllm)",
    },
    "registration": {
        "dense": "prefix caching with a window: every full block is registered (this project; vLLM's retention None)",
        "replay-tail": "prefix caching with a window: only the blocks hits at the replay boundaries and the junction need "
        "(vLLM's served prefix_cache_retention_interval=0, as its own words promise; oracle.registration)",
    },
    "freeing": {
        "by-group": "hybrid models: free lets go of each group's table in turn, group 0 first, each from its last entry (vLLM)",
        "by-position": "hybrid models: free lets go position by position from the last entry, every group's entry there in group order",
    },
}


class ProfileError(ValueError):
    """A profile string that names an unknown option or value, or values that cannot go together."""


@dataclass(frozen=True)
class Profile:
    allocation: str = "lowest-free"
    reuse: str = "free-first"
    duplicates: str = "first"
    registration: str = "dense"
    freeing: str = "by-group"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in OPTIONS[f.name]:
                raise ProfileError(f"profile option {f.name}={value!r}: the values are {', '.join(OPTIONS[f.name])}")
        if self.reuse == "release-order" and self.allocation != "any":
            raise ProfileError("reuse=release-order takes blocks in release order, not the lowest free: it needs allocation=any")

    @property
    def exact_ids(self) -> bool:
        """Whether block tables are compared id for id (else up to a renaming of ids)."""
        return self.allocation == "lowest-free"

    def any_ids(self) -> Profile:
        """This profile with allocation=any: the same oracle, its tables compared up to a renaming of ids."""
        return replace(self, allocation="any")

    def differences(self) -> dict[str, str]:
        """The options whose value is not the default."""
        default = Profile()
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)}

    def __str__(self) -> str:
        """The options that differ from the default, `OPTION=VALUE,...` (empty for the default profile)."""
        return ",".join(f"{k}={v}" for k, v in self.differences().items())

    def describe(self) -> str:
        """Every option with its value, for a verdict: `allocation=any reuse=free-first duplicates=first`."""
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


def parse(text: str, base: Profile | None = None) -> Profile:
    """`OPTION=VALUE,...` (commas or spaces between settings) over `base` (default: the default profile).

    The one parser of a profile's text. Only the edges call it (a command line's --profile, PAGED_PROFILE
    in testkit.config); a port's declaration is read by `declared`."""
    values = {f.name: getattr(base or Profile(), f.name) for f in fields(Profile)}
    for item in text.replace(",", " ").split():
        option, sep, value = item.partition("=")
        if not sep or option not in OPTIONS:
            raise ProfileError(f"profile setting {item!r}: expected OPTION=VALUE with OPTION one of {', '.join(OPTIONS)}")
        values[option] = value
    return Profile(**values)


def declared(port: object) -> Profile | None:
    """The profile a port declares, None when it declares none: its `PROFILE` attribute (a Python module's;
    a driver wrapped as a module, wire.remote.ExecImpl, gives its hello's words), or that text itself
    (a driver's hello words, comma-joined, as wire.target.Target keeps them). Parsed once per text."""
    return _declaration(port if isinstance(port, str) else str(getattr(port, "PROFILE", "") or ""))


@functools.lru_cache(maxsize=None)
def _declaration(text: str) -> Profile | None:
    return parse(text) if text.strip() else None


def hint(profile: Profile) -> str:
    """What to tell a port author when its block ids differ from the oracle's under `profile`."""
    if profile.exact_ids:
        return (
            "block ids differ under the profile allocation=lowest-free (every block taken is the lowest free one); "
            "a port that hands out other free blocks declares allocation=any (docs/CONTRACT.md, Profiles)"
        )
    return f"under allocation=any block ids are names, but sharing and each block's id for its lifetime are exact (profile {profile})"
