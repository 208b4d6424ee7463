"""The run's settings (testkit/config.py): read once from the environment, and handed to a child
process so that it reads back the same Config; the profile resolved once, with where it came from."""

from __future__ import annotations

from pathlib import Path

from oracle.profile import Profile, parse
from testkit.config import DECLARED, DEFAULT, DEFAULTS, ENV, FLAG, PENDING, Config


def test_an_empty_environment_gives_the_defaults() -> None:
    config = Config.from_env({})
    assert config == Config() and config.profile_source == PENDING and config.shrink_seconds is None
    assert config.vectors_dir is None
    assert (config.driver_timeout, config.explore_seconds, config.start_seconds) == (
        DEFAULTS["PAGED_DRIVER_TIMEOUT"], DEFAULTS["PAGED_EXPLORE_SECONDS"], DEFAULTS["PAGED_START_SECONDS"]
    )
    assert config.gate_shrink_seconds == DEFAULTS["PAGED_SHRINK_SECONDS"]


def test_a_child_reads_back_the_parents_config() -> None:
    parent = Config(
        impl="exec:x", profile=parse("allocation=any"), profile_source=ENV, shrink_seconds=5, explore_seconds=7, start_seconds=9,
        driver_timeout=3, coverage_out=Path("/tmp/c"), engines=True, engine_only="nano_vllm", announced="allocation=any prefix_caching",
        vectors_dir=Path("/tmp/v"),
    )
    assert Config.from_env(parent.child_env({"PAGED_OTHER": "kept", "HOME": "/h"})) == parent
    assert parent.child_env({"PAGED_OTHER": "kept"})["PAGED_OTHER"] == "kept"


def test_an_explicit_default_profile_stays_an_override() -> None:
    """`--profile allocation=lowest-free` on a port declaring allocation=any must still test lowest-free:
    the child gets the profile in full, never the empty text of the default."""
    child = Config.from_env(Config().given(Profile()).child_env({}))
    assert (child.profile, child.profile_source) == (Profile(), ENV)
    assert child.following(parse("allocation=any")) == child


def test_a_profile_not_given_follows_the_declaration_and_stays_in_the_parent() -> None:
    """None given: the declared profile (or the default), resolved once; never handed to a child, which may
    test another implementation."""
    declared = parse("allocation=any,duplicates=keep")
    resolved = Config().following(declared)
    assert (resolved.profile, resolved.profile_source) == (declared, DECLARED)
    assert resolved.following(None) == resolved
    assert (Config().following(None).profile, Config().following(None).profile_source) == (Profile(), DEFAULT)
    assert "PAGED_PROFILE" not in resolved.child_env({})
    flagged = Config().given(declared)
    assert (flagged.profile_source, flagged.following(Profile())) == (FLAG, flagged)


def test_unset_settings_are_removed_from_the_childs_environment() -> None:
    env = Config().child_env({"PAGED_PROFILE": "allocation=any", "PAGED_ENGINE_ONLY": "vllm_v1", "PAGED_SHRINK_SECONDS": "3",
                              "PAGED_VECTORS_DIR": "/tmp/v"})
    assert not {"PAGED_PROFILE", "PAGED_ENGINE_ONLY", "PAGED_SHRINK_SECONDS", "PAGED_VECTORS_DIR"} & env.keys()
