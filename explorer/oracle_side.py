"""The oracle's side of the walk: the oracle made, an error's kind, its tables of the live sequences, and
the table checkers (exact, or up to a renaming of ids, or both). Copying the oracle and its state key are
the oracle's own (`oracle.state`)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

from oracle.model import ModelKVCache
from oracle.profile import Profile, hint
from oracle.id_renaming import BlockNames
from wire.diff import list_difference

from .alphabet import Geometry
from .observation import CLOSED

# A table by its block_table arguments: `s` (group 0's), or `(s, layer)` (another group's, in a hybrid model).
Tables = Mapping[Any, Sequence[int]]
# check(want, got, carry, released) -> (what differs or None, the carry for the next step).
# want: the oracle's tables of the live sequences, got: the port's; carry: what the checker keeps
# along one path (None at the root); released: the oracle's block ids whose lifetime ended in this call.
TableCheck = Callable[[Tables, Tables, Any, Sequence[int]], tuple["str | None", Any]]


def new_model(g: Geometry, profile: Profile) -> ModelKVCache:
    """The oracle for geometry g under `profile`, empty: the one place the explorer makes one."""
    return ModelKVCache(*g.sizes, profile=profile, **g.options)


def profile_or_default(profile: Profile | str | None) -> Profile:
    """A Profile as it is; None (or "") the default profile. The explorer parses no profile's text: its
    callers parse theirs at their edge (oracle.profile.parse), and text here is a TypeError."""
    if isinstance(profile, Profile):
        return profile
    if profile:
        raise TypeError(f"the profile {profile!r} as text: the explorer takes a Profile (oracle.profile.parse it at the edge)")
    return Profile()


def error_kind(exc: BaseException, out_of_blocks: type[BaseException]) -> str:
    """The wire's KIND of an exception (and type_error, which has no wire form)."""
    if isinstance(exc, out_of_blocks):
        return "out_of_blocks"
    if isinstance(exc, KeyError):
        return "unknown_sequence"
    if isinstance(exc, ValueError):
        return "invalid_argument"
    if isinstance(exc, TypeError):
        return "type_error"
    return f"internal ({type(exc).__name__}: {exc})"


def live_of(model: ModelKVCache) -> Sequence[int]:
    return CLOSED if model.is_closed() else model.live()


def table_name(key: Any) -> str:
    """`block_table(s)`, or `block_table(s, layer)` for another group's table."""
    return f"block_table({key})" if isinstance(key, int) else f"block_table({key[0]}, {key[1]})"


def model_tables(model: ModelKVCache, live: Sequence[int], group_layers: Sequence[int]) -> dict[Any, list[int]]:
    """The oracle's tables of the live sequences: group 0's by `s`, then every other group's by `(s, layer)`."""
    out: dict[Any, list[int]] = {s: model.table(s) for s in live}
    out.update({(s, layer): model.table(s, layer) for s in live for layer in group_layers})
    return out


# -- table checkers ---------------------------------------------------------------------------------


def exact_tables(want: Tables, got: Tables, carry: Any, released: Sequence[int]) -> tuple[str | None, Any]:
    """allocation=lowest-free: every table equal, id for id."""
    for s in want:
        if list(got[s]) != list(want[s]):
            return f"{table_name(s)}{list_difference(list(got[s]), list(want[s]))}", carry
    return None, carry


def tables_up_to_renaming(want: Tables, got: Tables, carry: Any, released: Sequence[int], *, num_blocks: int) -> tuple[str | None, Any]:
    """allocation=any: tables equal up to a renaming of block ids bound for each block's lifetime, every id
    in the pool (`oracle.id_renaming.BlockNames`). carry: the names along this path, copied at every step (paths branch)."""
    names = carry.copy() if carry is not None else BlockNames(num_blocks)
    for m in released:
        names.release(m)
    for s in want:  # one renaming for every group's tables: their blocks are of one pool
        problem = names.check(table_name(s), list(got[s]), list(want[s]))
        if problem is not None:
            return problem, carry
    return None, names


def table_checks(profile: Profile, num_blocks: int, also_renamed: bool = False) -> list[tuple[TableCheck, str]]:
    """The checks a walk makes of the tables at every observation, in turn, each with its own carry along a
    path and what to tell a port author when it fails (`oracle.profile.hint`): the profile's (id for id under
    allocation=lowest-free, else up to a renaming).

    `also_renamed` (an exact-ids profile only): allocation=any's check first, its carry threaded along each
    path as a walk under allocation=any threads it, then the profile's. Tables equal id for id are equal up
    to a renaming (the identity), so the first that fails says how far off the port is: wrong under
    allocation=any too, or only its ids are not the lowest free ones."""
    renamed = functools.partial(tables_up_to_renaming, num_blocks=num_blocks)
    own = exact_tables if profile.exact_ids else renamed
    if not also_renamed:
        return [(own, hint(profile))]
    if not profile.exact_ids:
        raise ValueError(f"also_renamed: under the profile {profile} tables are already compared up to a renaming of block ids")
    return [(renamed, hint(profile.any_ids())), (own, hint(profile))]
