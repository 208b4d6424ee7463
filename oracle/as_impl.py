"""The model as an implementation under test: `pytest --impl oracle.as_impl`.

Running the suite against this second, independent implementation of the contract
shows that the suite tests behaviour, not the internals of `paged`. `under(profile)` is
the model taking another profile's choices, as a module (the gate's transcripts, the
vectors' answers).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

from .model import ModelKVCache as PagedKVCache
from .model import OutOfBlocks
from .profile import Profile

__all__ = ["OutOfBlocks", "PagedKVCache", "under"]


def under(profile: Profile) -> Any:
    """A module-like object whose PagedKVCache is the model under `profile`."""
    cls: Any = functools.wraps(PagedKVCache, updated=())(functools.partial(PagedKVCache, profile=profile))
    return SimpleNamespace(PagedKVCache=cls, OutOfBlocks=OutOfBlocks, PROFILE=str(profile), __name__="oracle.as_impl")
