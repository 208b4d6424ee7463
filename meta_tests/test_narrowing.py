"""ci/engines narrows a window adapter's gate to the tests that need sliding_window only on behaviour shown equal
to its base's (mutants/engines/behaviour.py, `same_as_base` in mutants/engines/runner.py), never on its class
alone: a cache that drops prefix caching is refused, on our cache (mutants/ports/no_caching.py) and on issue 52's
held-out adapter (mutants/ports/vllm_window_without_caching.py, vLLM's own backend class without prefix caching).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import paged
from mutants.engines.behaviour import NEEDED, first_difference
from mutants.ports import no_caching

ROOT = Path(__file__).resolve().parent.parent


def module(name: str, cache: type) -> ModuleType:
    made = ModuleType(name)
    made.PagedKVCache, made.OutOfBlocks = cache, paged.OutOfBlocks  # type: ignore[attr-defined]
    return made


def test_the_same_cache_behaves_the_same_and_the_script_shows_what_narrowing_skips() -> None:
    assert first_difference(module("ours", paged.PagedKVCache), module("base", paged.PagedKVCache)) == ""


def test_a_cache_without_prefix_caching_does_not_behave_as_its_base() -> None:
    differs = first_difference(module("no_caching", no_caching.PagedKVCache), module("base", paged.PagedKVCache))
    assert differs.startswith("response='ok "), differs
    assert ", but should be 'ok " in differs and "base's [prefix-random-1, request " in differs, differs


def test_a_script_that_shows_no_hit_proves_nothing() -> None:
    """Two caches that both drop prefix caching agree on every call, yet the script showed no hit on the base:
    refused, since equal answers then say nothing of prefix caching."""
    differs = first_difference(module("no_caching", no_caching.PagedKVCache), module("base", no_caching.PagedKVCache))
    assert differs.startswith("the script showed no a prefix hit") and NEEDED, differs


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm: engine not installed (ci/engines installs it)")
def test_the_held_out_window_adapter_is_not_narrowed() -> None:
    """In a process of its own: the adapters install stand-ins for modules vLLM imports (engines/vllm_engine.py)."""
    code = (
        "from mutants.engines.runner import ENGINES, Engine, same_as_base\n"
        "print(same_as_base(Engine('held_out', 'vllm', '', adds='sliding_window', base='vllm_v1', module='vllm_window_without_caching')))\n"
        "print(same_as_base(ENGINES['vllm_window']) or 'narrowed')\n"
    )
    path = os.pathsep.join([str(ROOT / "mutants" / "ports"), str(ROOT)])
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    held_out, window = run.stdout.splitlines()[-2:]
    assert held_out.startswith("built without sliding_window, it does not behave as engines.vllm_v1: response="), held_out
    assert window == "narrowed", window  # vllm_window itself is still narrowed
