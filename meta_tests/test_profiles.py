"""Profiles and the renaming of block ids, by hand: the helpers the suite follows a port's profile with.

`oracle.profile` (parsing), `oracle.id_renaming.BlockNames` (the bijection bound for each block's
lifetime), the oracle's `reuse` and `duplicates` choices on hand-worked sessions, and transcripts'
`# released` lines with a renaming replay. These test the suite's own machinery, not the port.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest

from oracle import ModelKVCache
from oracle.profile import Profile, ProfileError, parse
from oracle.id_renaming import BlockNames
import explorer
from mutants.ports import shifted_ids
from wire.transcript import Transcript, parse as parse_transcript, replay, written_for_another

pytestmark = pytest.mark.oracle


def one(value: float) -> tuple[np.ndarray, np.ndarray]:
    k = np.full((1, 1, 1), value, np.float16)
    return k, -k


# -- profiles --------------------------------------------------------------------------------


def test_a_profile_names_only_what_differs_from_the_default() -> None:
    assert parse("") == Profile() and str(Profile()) == "" and Profile().exact_ids
    p = parse("allocation=any, duplicates=keep")
    assert (p.allocation, p.reuse, p.duplicates) == ("any", "free-first", "keep")
    assert str(p) == "allocation=any,duplicates=keep" and not p.exact_ids
    assert p.describe() == "allocation=any reuse=free-first duplicates=keep registration=dense freeing=by-group"
    assert parse("duplicates=newest", base=p).duplicates == "newest" and parse("duplicates=newest", base=p).allocation == "any"


@pytest.mark.parametrize(
    "text, says",
    [
        ("allocation=lowest", "the values are lowest-free, any"),
        ("order=any", "OPTION one of allocation, reuse, duplicates"),
        ("allocation", "expected OPTION=VALUE"),
        ("reuse=release-order", "needs allocation=any"),
    ],
)
def test_a_bad_profile_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ProfileError, match=says):
        parse(text)


# -- the renaming ------------------------------------------------------------------------------


def test_a_renaming_binds_each_block_for_its_lifetime() -> None:
    names = BlockNames(10)
    assert names.check("t0", [7, 3], [0, 1]) is None
    assert names.oracle_ids([3, 7]) == [1, 0]
    assert names.check("t1", [7, 9], [0, 2]) is None  # block 0 shared, block 2 new
    changed = names.check("t0", [8, 3], [0, 1])
    assert changed is not None and "t0[0]=8, but should be 7" in changed and "since t0[0]" in changed
    handed_out = names.check("t2", [3], [4])
    assert handed_out is not None and "3 is already the block of t0[1]" in handed_out
    assert names.check("t3", [1, 2, 3], [5, 6]) == "t3 has 3 blocks, but should have 2: [1, 2, 3] for the oracle's [5, 6]"
    names.release(1)  # the oracle's block 1 went back to the pool: port id 3 may name another block now
    assert names.check("t2", [3], [4]) is None
    assert names.check("t4", [5], [1]) is None  # block 1's next lifetime has a name of its own


def test_a_renaming_is_of_the_pools_ids_only() -> None:
    """An id outside 0 .. N-1 names no block of the pool: refused first, whatever the bindings."""
    names = BlockNames(3)
    assert names.check("t0", [1, 2], [0, 1]) is None
    assert names.check("t1", [1, 3], [0, 2]) == "t1[1]=3, but should be a block id of the pool, 0..2 (num_blocks=3)"
    assert names.check("t1", [-2], [2]) == "t1[0]=-2, but should be a block id of the pool, 0..2 (num_blocks=3)"
    # -1 is a released entry (sliding window): it stands exactly where the oracle's table has one
    assert names.check("t1", [-1], [2]) == "t1[0]=-1, but should be a block of the pool, not -1 (released)"
    assert names.check("t1", [2], [-1]) == "t1[0]=2, but should be -1, an entry the sliding window released"
    assert names.check("t2", [-1, 1], [-1, 0]) is None
    assert names.copy().check("t1", [0, 7], [0, 2]) == "t1[1]=7, but should be a block id of the pool, 0..2 (num_blocks=3)"


def test_a_renaming_maps_a_released_entry_to_itself_and_never_binds_it() -> None:
    """-1, an entry the sliding window released, is no block: it matches -1 only, and no id is bound to it."""
    names = BlockNames(3)
    assert names.check("t0", [-1, -1, 2], [-1, -1, 0]) is None
    assert names.oracle_ids([-1, -1, 2]) == [-1, -1, 0]
    assert names.check("t1", [-1, 1], [-1, 1]) is None  # port id 1 is free to name oracle block 1: -1 bound nothing
    assert names.check("t2", [-1], [0]) == "t2[0]=-1, but should be a block of the pool, not -1 (released)"
    assert names.check("t2", [0], [-1]) == "t2[0]=0, but should be -1, an entry the sliding window released"
    names.release(-1)  # a released line never names -1; if it did, nothing is unbound
    assert names.check("t3", [2, 1], [0, 1]) is None


# -- the oracle's choices --------------------------------------------------------------------------


def test_release_order_takes_the_block_released_longest_ago_cached_or_not() -> None:
    """nano-vllm's one queue: a cached block released before a free one is reused (evicted) first."""
    model = ModelKVCache(4, 1, 1, 1, 1, prefix_caching=True, profile=parse("allocation=any,reuse=release-order"))
    model.add_seq(0, [5, 6])
    model.append(0, 0, *one(1.0))  # block 0, registered under (5,)
    model.add_seq(1, [9])
    model.append(1, 0, *one(2.0))  # block 1, registered under (9,)
    model.free(0)  # block 0: cached
    model.free(1)  # block 1: cached
    model.add_seq(2, [7, 7, 7])
    model.append(2, 0, *np.ones((2, 1, 3, 1), np.float16))  # takes 2 and 3 (never used: free, front of the queue), then 0
    assert model.block_table(2).tolist() == [2, 3, 0] and model.stats()["evictions"] == 1
    free_first = ModelKVCache(4, 1, 1, 1, 1, prefix_caching=True)
    free_first.add_seq(0, [5, 6])
    free_first.append(0, 0, *one(1.0))
    free_first.free(0)
    free_first.add_seq(1, [8, 8])
    free_first.append(1, 0, *np.ones((2, 1, 2, 1), np.float16))
    assert free_first.block_table(1).tolist() == [1, 2] and free_first.stats()["evictions"] == 0


@pytest.mark.parametrize("duplicates, hit_block, cached, free", [("first", 0, 1, 3), ("keep", 0, 2, 2), ("newest", 1, 1, 3)])
def test_a_second_block_under_a_registered_key(duplicates: str, hit_block: int, cached: int, free: int) -> None:
    """Two sequences fill the same key (the second without a hit: it declared its tokens later)."""
    model = ModelKVCache(4, 1, 1, 1, 1, prefix_caching=True, profile=parse(f"duplicates={duplicates}"))
    model.add_seq(0, [5, 6])
    model.append(0, 0, *one(1.0))  # block 0 under (5,)
    model.add_seq(1, [])
    model.extend(1, [5, 6])
    model.append(1, 0, *one(2.0))  # block 1, the same key
    model.free(0)
    model.free(1)
    model.add_seq(2, [5, 6])
    assert model.block_table(2).tolist() == [hit_block]
    assert model.gather(2, 0)[0].item() == (1.0 if hit_block == 0 else 2.0)
    assert (model.stats()["cached"], model.stats()["free"]) == (cached - 1, free)


# -- transcripts ------------------------------------------------------------------------------------


TRANSCRIPT = """# id: renaming
# comment: a block freed and taken again
> new 2 1 1 1 1
< ok 0
> add_seq 0 0
< ok 0
> append 0 0 0 1,1,1 1,1,1 3c00 bc00
< ok
> block_table 0 0
< ok 0
> free 0 0
< ok
# released 0 0
> add_seq 0 1
< ok 0
> append 0 1 0 1,1,1 1,1,1 4000 c000
< ok
> block_table 0 1
< ok 0
"""


def port(ids: list[str]) -> Callable[[str], str]:
    """A port that answers TRANSCRIPT's block_table requests with `ids`, and everything else as the oracle does."""
    answers = iter(ids)
    return lambda line: next(answers) if line.startswith("block_table") else "ok 0" if line.startswith(("new", "add_seq")) else "ok"


def test_released_lines_round_trip_and_end_a_lifetime() -> None:
    transcript = parse_transcript(TRANSCRIPT)
    assert transcript.released == {4: [("0", [0])]}
    assert transcript.text() == TRANSCRIPT

    assert replay(transcript, port(["ok 1", "ok 0"]), exact_ids=False) is None  # any free block: renamed
    assert replay(transcript, port(["ok 1", "ok 1"]), exact_ids=False) is None  # the same id again, after its release
    mismatch = replay(transcript, port(["ok 1", "ok 0"]))
    assert mismatch is not None and "block_table[0]=1, but should be 0" in str(mismatch) and "allocation=any" in str(mismatch)
    # the oracle's block 0 still held (no release) and a new block 1 taken: the port must not answer 1 again
    held = parse_transcript(TRANSCRIPT.replace("# released 0 0\n", "").rsplit("< ok 0", 1)[0] + "< ok 1\n")
    assert replay(held, port(["ok 1", "ok 0"]), exact_ids=False) is None
    mismatch = replay(held, port(["ok 1", "ok 1"]), exact_ids=False)
    assert mismatch is not None and "already the block of" in str(mismatch)


@pytest.mark.parametrize("exact_ids", [True, False])
def test_a_replay_refuses_ids_outside_the_pool_under_every_profile(exact_ids: bool) -> None:
    """TRANSCRIPT's pool has two blocks: an answer of 2 is no block of it, first or after a release."""
    for answers, step in ((["ok 2", "ok 0"], 4), (["ok 0", "ok 2"], 8)):
        mismatch = replay(parse_transcript(TRANSCRIPT), port(answers), exact_ids=exact_ids)
        assert mismatch is not None and mismatch.step == step, mismatch
        assert mismatch.why == "block_table[0]=2, but should be a block id of the pool, 0..1 (num_blocks=2)"


def test_the_explorer_refuses_ids_outside_the_pool_under_allocation_any() -> None:
    result = explorer.explore(explorer.ModulePort(shifted_ids), explorer.Geometry(2, 1, 1, 1, 1), 4, profile=parse("allocation=any"))
    assert result.failure is not None and result.failure.path == [("add_seq", 0), ("append", 0, 0, 2)], result
    assert result.failure.what.startswith("block_table(0)[1]=2, but should be a block id of the pool, 0..1 (num_blocks=2) [block_table(0), after append(0, 0, T=2)]"), result.failure.what


def test_a_vector_written_for_other_profile_values_is_not_the_ports() -> None:
    vector = Transcript(meta={"id": "v", "profile": "duplicates=keep"})
    assert written_for_another(vector, parse("duplicates=keep,allocation=any")) is None
    why = written_for_another(vector, Profile())
    assert why is not None and "written for duplicates=keep; the port has duplicates=first" in why
    assert written_for_another(Transcript(meta={"id": "v"}), Profile()) is None


# -- registration=replay-tail in a hybrid model (CONTRACT.md, "Profiles": its example) ----------


def hybrid_served(prompts: list[list[int]]) -> tuple[list[int], list[list[list[int]]]]:
    """B = 1, layer_windows=(None, 3), registration=replay-tail: each prompt added, written and freed in turn; what
    each was served and, after it, the indexes of its blocks registered in each group."""
    model = ModelKVCache(32, 1, 2, 1, 1, prefix_caching=True, layer_windows=(None, 3), profile=parse("registration=replay-tail"))
    served, registered = [], []
    for sid, prompt in enumerate(prompts):
        served.append(model.add_seq(sid, prompt))
        for p in range(model.seq_len(sid, 0), len(prompt)):
            for layer in (0, 1):
                model.append(sid, layer, *one(p))
        registered.append([[i for i in range(len(prompt)) if model.registered_block(g, prompt, i) is not None] for g in (0, 1)])
        model.free(sid)
    return served, registered


def test_replay_tail_in_a_hybrid_model_keeps_need_plus_one_below_each_boundary_and_the_junction() -> None:
    """The full-attention group registers densely; the window group (need = 2) the need + 1 blocks below (p-1)//B
    and p//B, and below the junction: the full-attention group's hit at add_seq, read from the keys, nothing kept."""
    system = [7, 7, 7, 7]
    served, registered = hybrid_served([system + [1, 2, 3], system + [4, 5, 6], system + [8, 9, 10]])
    assert served == [0, 0, 4]
    assert [r[0] for r in registered] == [list(range(7))] * 3
    assert [r[1] for r in registered] == [[3, 4, 5, 6], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]]
    assert hybrid_served([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9]])[0] == [0, 4]  # #57610's shape: one block less, not 0


def test_replay_tail_in_a_hybrid_model_remembers_no_prompt() -> None:
    """The junction of a hybrid model is read from the registered keys: the oracle keeps no set of prompts seen, so
    what it holds is bounded by the pool whatever the number of prompts."""
    model = ModelKVCache(4, 1, 2, 1, 1, prefix_caching=True, layer_windows=(None, 2), profile=parse("registration=replay-tail"))
    for sid in range(50):
        model.add_seq(sid, [sid, sid + 1])
        model.free(sid)
    assert model.registration.seen == set() and model.registration.boundaries == {}
