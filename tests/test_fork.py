"""Fork and copy on write: a fork shares every block, a write to a shared block copies it (every
layer's data), and no write through one sequence is ever seen through another.

CONTRACT.md "Operations" (fork, append) and "Allocation policy" (copy on write in position order).
"""

from __future__ import annotations

import math
from types import ModuleType

from hypothesis import given, note
from hypothesis import strategies as st

from tests.assertions import assert_equal, assert_same_bits
from tests.harness import assert_matches_model
from tests.programs import APPEND, GEOMETRY, attempt, both, new_cache, run
from tests.strategies import make_chunk


def test_copy_on_write_across_layers(impl: ModuleType) -> None:
    """A layer that catches up inside shared blocks copies each of them, in position order."""
    cache, model = both(impl, 12, 2, 2, 1, 2)
    run((cache, model), "add_seq", 0)
    run((cache, model), "append", 0, 0, *make_chunk(1, 6, 2, 1))  # blocks 0, 1, 2 for layer 0
    run((cache, model), "fork", 0, 1)
    run((cache, model), "append", 1, 1, *make_chunk(1, 5, 2, 2))  # layer 1 touches blocks 0, 1, 2: all shared
    assert_equal('block_table(1)', cache.block_table(1).tolist(), [3, 4, 5], 'block_table(1)')
    assert_equal('block_table(0)', cache.block_table(0).tolist(), [0, 1, 2], 'block_table(0)')
    assert_matches_model(cache, model)
    k_parent, _ = cache.gather(0, 0)
    k_child, _ = cache.gather(1, 0)
    assert_same_bits('k_parent', k_parent, k_child, "the copies carry every layer, layer 0 included")


@given(
    geometry=GEOMETRY,
    prompt=st.lists(APPEND, max_size=8),
    grandchild=st.booleans(),
    child_appends=st.lists(APPEND, min_size=1, max_size=8),
    spare=st.integers(0, 6),
)
def test_a_fork_then_an_append_to_the_child_never_changes_the_parent(
    geometry: tuple[int, int, int, int],
    prompt: list[tuple[int, int, int, int, str, bool]],
    grandchild: bool,
    child_appends: list[tuple[int, int, int, int, str, bool]],
    spare: int,
) -> None:
    bs, n_layers, heads, dims = geometry
    lens = [0] * n_layers
    for _, layer, tokens, *_ in prompt:
        lens[layer % n_layers] += tokens
    num_blocks = math.ceil(max(lens) / bs) + spare + 1
    cache, model = new_cache(num_blocks, geometry)
    parent, child = 0, 1
    run((cache, model), "add_seq", parent)
    for _, layer, tokens, seed, dtype, tricky in prompt:  # layers end at different lengths
        run((cache, model), "append", parent, layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky))
    run((cache, model), "fork", parent, child)
    if grandchild:  # the writer is a fork of a fork; the parent shares through two levels
        run((cache, model), "fork", child, 2)
        child = 2
    parent_table, parent_gathers = model.block_table(parent).tolist(), [model.gather(parent, li) for li in range(n_layers)]
    for _, layer, tokens, seed, dtype, tricky in child_appends:
        if isinstance(attempt((cache, model), "append", child, layer % n_layers, *make_chunk(heads, tokens, dims, seed, dtype, tricky)), BaseException):
            note("the child ran out")
        when = f", after the child's append({child}, {layer % n_layers})"
        assert_matches_model(cache, model, [parent], when=when)  # every table and length, and the parent's gathers
        assert_equal(f"the model's block_table({parent})", model.block_table(parent).tolist(), parent_table, f"the parent's table{when}")
        for li, (k, v) in enumerate(parent_gathers):
            assert_same_bits(f"the model's gather({parent}, {li}) k", model.gather(parent, li)[0], k, f"the parent's data{when}")
            assert_same_bits(f"the model's gather({parent}, {li}) v", model.gather(parent, li)[1], v, f"the parent's data{when}")
    cache.close()
