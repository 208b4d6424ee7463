"""The harness: which implementation is under test, and how its state is compared with the oracle.

Tests reach the cache only through `impl()` and its public calls, so the same suite gates
any port. The run's settings (a `testkit.config.Config`) come from the suite's plugin
(tests/plugins/implementation.py: `configure`, once, at the start): `--impl` (or PAGED_IMPL) names either a Python module exporting PagedKVCache and
OutOfBlocks, or `exec:CMD`, a driver program in any language speaking docs/PROTOCOL.md,
wrapped by `wire.remote` as such a module. Never reads a private attribute.

With `--transcript PATH`, every call the tests make is recorded as a request line, and the
first failing test's calls (for a Hypothesis test, those of its last, shrunk example) are
written to PATH as a transcript with the oracle's answers: `ci/gate --replay PATH` replays it.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from tests import assertions
from tests.assertions import assert_equal, assert_same_bits, assert_table
from oracle import ModelKVCache
from oracle import OutOfBlocks as ModelOutOfBlocks
from oracle.profile import Profile, declared, hint
from testkit.config import PENDING, Config
from tests.oracle_ids import OracleIdsImpl
from wire.remote import ExecImpl, RemoteKVCache
from wire.replay import Replayer
from wire.record import Recorder
from wire.target import Impl, module_parts

@dataclass
class Run:
    """The run's settings, and what the harness keeps for them: the drivers started, the views in the oracle's ids,
    the replayers, where --transcript writes the first failure (`record`: empty when not recording)."""

    config: Config = field(default_factory=Config)
    record: list[Path] = field(default_factory=list)
    drivers: dict[str, ExecImpl] = field(default_factory=dict)
    oracle_ids: dict[int, OracleIdsImpl] = field(default_factory=dict)
    replayers: dict[str, Replayer] = field(default_factory=dict)


_run = Run()  # replaced whole by `configure`, never changed from outside otherwise


def configure(config: Config, transcript: str | None = None) -> None:
    """The run's settings (the plugin's, at pytest_configure): the implementation under test, the profile
    given to test under whatever it declares (else PENDING: `config` resolves it), the drivers' timeout; and
    where --transcript writes the first failure's calls."""
    global _run
    stop_drivers()
    _run = Run(config, [Path(transcript)] if transcript else [])


def config() -> Config:
    """The run's settings (its profile PENDING until `profile` resolves it)."""
    return _run.config


def profile() -> Profile:
    """The profile under test: `--profile` if given, else the implementation's own (the default when it declares none).
    A profile not given is resolved into the run's Config once, on first need (reaching the implementation: a module's
    `PROFILE`, a driver's hello), so that an implementation that cannot be reached fails the tests that reach it, not the
    run's start or its collection."""
    if _run.config.profile_source == PENDING:
        _run.config = _run.config.following(declared(raw_impl()))
    return _run.config.profile


assertions.table_hint = lambda: hint(profile())


def adopt(cache: Any, model: ModelKVCache) -> None:
    """A test that drives its own oracle with every call, model first, lends it to a cache seen in the oracle's ids."""
    if hasattr(cache, "adopt"):
        cache.adopt(model)


def model(*sizes: Any, **kwargs: Any) -> ModelKVCache:
    """The oracle for a cache of these sizes, under the profile under test."""
    return ModelKVCache(*sizes, profile=profile(), **kwargs)


def target() -> Impl:
    """What --impl names, taken apart (`wire.target`): a module, or a driver's command."""
    return _run.config.implementation


def impl_name() -> str:
    """What --impl names, as given: a module, or `exec:CMD`."""
    return _run.config.impl


def is_wire() -> bool:
    """Whether the implementation under test is a driver reached over the wire (`exec:CMD`)."""
    return target().driver


def raw_impl() -> Any:
    """The module under test as it is (a driver wrapped as a module); it must export PagedKVCache and OutOfBlocks."""
    name = impl_name()
    if is_wire():
        if name not in _run.drivers:
            _run.drivers[name] = ExecImpl(target(), _run.config.driver_timeout)
        return _run.drivers[name]
    module = importlib.import_module(name)
    missing = [n for n in ("PagedKVCache", "OutOfBlocks") if not hasattr(module, n)]
    if missing:
        raise ImportError(f"implementation module {name!r} does not export {', '.join(missing)}")
    return module


def impl() -> Any:
    """The module under test, as tests use it: its calls recorded with --transcript, and under
    allocation=any its block tables read through the renaming (`oracle_ids.OracleIdsImpl`)."""
    module = raw_impl()
    if _run.record:
        module = RECORDER.wrap(module)
    current = profile()
    if not current.exact_ids:
        views = _run.oracle_ids
        if id(module) not in views or views[id(module)].profile != current:
            views[id(module)] = OracleIdsImpl(module, current)
        module = views[id(module)]
    return module


def capabilities() -> frozenset[str]:
    """The optional parts of the contract the implementation has (a driver announces them at hello). A module
    has `hybrid` (CONTRACT.md, "Hybrid models") when its constructor takes `layer_windows`."""
    module = raw_impl()
    if is_wire():
        return frozenset(module.capabilities)
    return module_parts(module)


def group_layers(model: ModelKVCache) -> list[int]:
    """The first layer of each group after group 0: `block_table(s, layer)` names the other tables of a hybrid
    cache (none when there is one group, whose table `block_table(s)` is)."""
    return [model.group_of.index(g) for g in range(1, len(model.group_windows))]


def replayer() -> Replayer:
    """What replays transcripts (the vectors) against the implementation under test: for a driver, one
    session for many of them (`wire.replay.Replayer`)."""
    name = impl_name()
    if name not in _run.replayers:
        _run.replayers[name] = Replayer(target(), _run.config.driver_timeout)
    return _run.replayers[name]


def stop_drivers() -> None:
    """Stop every driver the run started (at the session's end)."""
    for driver in _run.drivers.values():
        driver.stop()
    for shared in _run.replayers.values():
        shared.stop()


# -- comparing ---------------------------------------------------------------------------------


def expected_error(model_error: BaseException) -> type[BaseException]:
    """The implementation's exception type for an error the model raised."""
    if isinstance(model_error, ModelOutOfBlocks):
        return impl().OutOfBlocks  # type: ignore[no-any-return]
    return type(model_error)


def ask_ahead(cache: Any, calls: Iterable[tuple[str, tuple[Any, ...]]]) -> None:
    """A driver's cache gets the requests of the queries the caller makes next, in this order, in one
    write (`RemoteKVCache.prefetch`): their answers come back together, not one round trip each. The
    calls are then made as usual; for a module's cache, `calls` (a generator) is not even made."""
    prefetch = getattr(cache, "prefetch", None)
    if prefetch is not None:
        prefetch(calls)


def sent_ahead(cache: Any, name: str, args: tuple[Any, ...], outcome: Any) -> bool:
    """Whether the call was sent ahead of its answer, given the oracle's outcome (its result, or the exception
    it raised): a driver's unwrapped cache (not recording, exact ids) sends it with the next call's requests
    (`RemoteKVCache.defer`), and that call fails the test if the driver's answer is not the oracle's. The
    caller makes another call after it (the machines' checks always do), or, when False, makes the call."""
    if not isinstance(cache, RemoteKVCache):
        return False
    if isinstance(outcome, BaseException):
        error = expected_error(outcome)
        if cache.kind_of(error) is None:
            return False
        cache.defer(name, *args, error=error)
        return True
    if name not in cache.DEFERRABLE or (name == "add_seq") != isinstance(outcome, int):
        return False
    cache.defer(name, *args, hits=outcome if name == "add_seq" else None)
    return True


def snapshot(cache: Any, seqs: Iterable[int], n_layers: int) -> dict[str, Any]:
    """Every observable of the cache for the given live sequences: stats, tables, lengths, gathers."""
    seqs = list(seqs)
    per_seq = [("block_table", ()), *((q, (layer,)) for layer in range(n_layers) for q in ("seq_len", "gather"))]
    ask_ahead(cache, itertools.chain([("stats", ()), ("num_free_blocks", ())], ((name, (s, *at)) for s in seqs for name, at in per_seq)))
    state: dict[str, Any] = {"stats": dict(cache.stats()), "free": cache.num_free_blocks()}
    for s in seqs:
        state[f"table {s}"] = cache.block_table(s).tolist()
        for layer in range(n_layers):
            state[f"len {s}/{layer}"] = cache.seq_len(s, layer)
            for name, arr in zip("kv", cache.gather(s, layer)):
                state[f"{name} {s}/{layer}"] = (arr.shape, arr.dtype, arr.tobytes())  # the raw bits
    return state


@dataclass
class Reads:
    """What one comparison got from the cache, kept so that a check of its own need not fetch it again: each
    live sequence's `block_table(s)`, and each compared gather's arrays beside the model's."""

    tables: dict[int, Any] = field(default_factory=dict)
    gathers: dict[tuple[int, int], tuple[Any, Any]] = field(default_factory=dict)  # (seq, layer): (cache's (k, v), model's)


def assert_matches_model(
    cache: Any, model: ModelKVCache, seqs: Iterable[int] | None = None, when: str = "", reads: Reads | None = None
) -> dict[str, int]:
    """The cache's stats, free count, every live table and length, and the given sequences' gathers (every
    live one's by default) equal the model's; returns the cache's stats (for checks of their own, with no
    second request). `when` follows each failure's call, e.g. ", after the refused free(3)". With `reads`,
    the arrays the cache returned are kept in it."""
    __tracebackhide__ = True
    layers = range(model.n_layers)
    gathered = list(model.tables if seqs is None else seqs)
    ask_ahead(cache, itertools.chain(
        [("stats", ()), ("num_free_blocks", ())],
        ((name, (s, *at)) for s in model.tables for name, at in [("block_table", ()), *(("seq_len", (layer,)) for layer in layers)]),
        (("gather", (s, layer)) for s in gathered for layer in layers),
    ))
    stats: dict[str, int] = cache.stats()
    assert_equal("stats()", stats, model.stats(), f"stats(){when}")
    assert_equal("num_free_blocks()", cache.num_free_blocks(), model.num_free_blocks(), f"num_free_blocks(){when}")
    for s in model.tables:
        table = cache.block_table(s)
        if reads is not None:
            reads.tables[s] = table
        if table.dtype != np.int32:  # else str(table.dtype) is "int32": the check passes, unwritten
            assert_equal(f"block_table({s}).dtype", str(table.dtype), "int32", f"block_table({s}){when}")
        assert_table(f"block_table({s})", table.tolist(), model.block_table(s).tolist(), model.num_blocks, f"block_table({s}){when}")
        for layer in group_layers(model):
            got = cache.block_table(s, layer).tolist()
            assert_table(f"block_table({s}, {layer})", got, model.block_table(s, layer).tolist(), model.num_blocks, f"block_table({s}, {layer}){when}")
        for layer in range(model.n_layers):
            assert_equal(f"seq_len({s}, {layer})", cache.seq_len(s, layer), model.seq_len(s, layer), f"seq_len({s}, {layer}){when}")
    for s in gathered:
        for layer in layers:
            got, want = cache.gather(s, layer), model.gather(s, layer)
            if reads is not None:
                reads.gathers[s, layer] = got, want
            for name, g, w in zip("kv", got, want):
                contiguous = isinstance(g, np.ndarray) and g.flags.c_contiguous
                if contiguous and assertions.same_bits(g, w):
                    continue  # both checks below pass: their messages are written for a failure only
                assert_equal(f"gather({s}, {layer}) {name} is a C-contiguous ndarray", contiguous, True, f"gather({s}, {layer}){when}")
                assert_same_bits(f"gather({s}, {layer}) {name}", g, w, f"gather({s}, {layer}){when}")
    return stats


def first_kv_difference(cache: Any, model: ModelKVCache, seqs: Iterable[int]) -> str | None:
    """The first K or V value the cache holds that differs from the model's, over the given sequences and every
    layer: `gather(1, 0) v[head=0, pos=3, dim=2]=..., but should be ...`, with both values; None when none does.
    For a failure seen through a computation on the data (the toy decoder's logits), to say where it began."""
    for s in seqs:
        for layer in range(model.n_layers):
            for name, got, want in zip("kv", cache.gather(s, layer), model.gather(s, layer)):
                how = assertions.differs(got, want)
                if how is not None:
                    return f"gather({s}, {layer}) {name}{how}"
    return None


RECORDER = Recorder()


def begin_example() -> None:
    """A new example begins (a Hypothesis example, or a test): the transcript starts afresh."""
    RECORDER.reset()


def write_failure(nodeid: str, message: str) -> Path | None:
    """Write the first failing test's recorded calls as a transcript, with the oracle's answers.

    None when not recording, or when a failure was written already.
    """
    if not _run.record:
        return None
    path = _run.record.pop()
    first = message.strip().splitlines()[0][:200] if message.strip() else "failed"
    path.write_text(RECORDER.failure(f"{nodeid}: {first}", impl_name(), profile()).text(), encoding="ascii", errors="replace")
    return path
