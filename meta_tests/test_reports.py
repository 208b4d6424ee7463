"""How the suite's failures read: a state machine's failure in the wire's terms (`machines.report`).

Run on a broken oracle (mutants/ports/seq_len_one_too_many.py), not on the implementation under
test, so it checks the report alone and passes or fails the same for every implementation.
"""

from __future__ import annotations

import functools
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests import harness
import oracle.as_impl
from mutants.ports.seq_len_one_too_many import SeqLenOneTooMany
from tests.machines import CacheMachine, report
from wire.transcript import read


def test_a_failure_shows_the_requests_before_the_rule_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine's failure on a broken cache: a note with the first answer that differs on the wire and the
    requests up to it comes before Hypothesis's steps, and its transcript replays to the same difference."""
    raw = oracle.as_impl.under(harness.profile())
    broken = types.ModuleType("_oracle_seq_len_one_too_many")
    broken.PagedKVCache = functools.partial(SeqLenOneTooMany, raw.PagedKVCache)  # type: ignore[attr-defined]
    broken.OutOfBlocks = raw.OutOfBlocks  # type: ignore[attr-defined]
    broken.PROFILE = raw.PROFILE  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, broken.__name__, broken)
    monkeypatch.setattr(harness, "_run", harness.Run(replace(harness.config(), impl=broken.__name__)))
    quick = settings(max_examples=50, derandomize=True, database=None, phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False)
    with pytest.raises(AssertionError) as info:
        run_state_machine_as_test(CacheMachine, settings=quick)
    notes = getattr(info.value, "__notes__", [])
    ours = [i for i, n in enumerate(notes) if n.startswith("In the wire protocol, the first answer that differs")]
    steps = [i for i, n in enumerate(notes) if "state = CacheMachine()" in n]
    assert ours and steps and ours[0] < steps[0], f"the wire's note is not before the steps: {notes}"
    note = notes[ours[0]]
    assert "(seq_len " in note.splitlines()[0] and "\n  > new " in note and "\n  ! the cache answered: ok " in note, note
    path = Path(note.rsplit("All ", 1)[1].split(": ", 1)[1].split(";", 1)[0])
    mismatch, trouble = report.first_difference(read(path), broken.__name__)
    assert trouble is None and mismatch is not None and mismatch.request.startswith("seq_len "), (mismatch, trouble)
    assert str(mismatch) in note.splitlines()[0]
