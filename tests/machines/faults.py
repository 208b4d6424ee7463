"""`FaultMachine` and `TypeFaultMachine`: CacheMachine's valid calls, and every fault of the contract's error table.

`FaultMachine` adds every fault that a driver can be sent (the KeyError and ValueError
rows) at any state, `TypeFaultMachine` the TypeError rows (the Python surface, skipped for a
driver). Each fault must raise the contract's type and change nothing observable.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import rule

from tests.assertions import assert_raises
from oracle import ModelKVCache
from tests.strategies import make_chunk

from .cache import LAYERS, SEEDS, CacheMachine, seqs, step

NOT_INTEGERS = st.sampled_from([True, False, 1.0, 0.0, "0", None, 0.5, np.float64(1.0), np.bool_(False)])
SEQ_CALLS = ("fork_parent", "append", "gather", "seq_len", "block_table", "free")
# One thing wrong with k or v, everything else right: fault -> the contract's exception.
VALUE_FAULTS: dict[str, type[BaseException]] = {
    "k_2d": ValueError,
    "v_2d": ValueError,
    "k_4d": ValueError,
    "both_0d": ValueError,
    "shapes_differ": ValueError,
    "wrong_heads": ValueError,
    "wrong_dims": ValueError,
}
TYPE_FAULTS: dict[str, type[BaseException]] = {
    "k_bool": TypeError,
    "v_bool": TypeError,
    "k_complex": TypeError,
    "v_complex128": TypeError,
    "k_object": TypeError,
    "k_str": TypeError,
    "v_bytes": TypeError,
}


def faulty_chunk(fault: str, heads: int, tokens: int, dims: int, seed: int) -> tuple[Any, Any]:
    """A float32 chunk with the one fault named (a key of VALUE_FAULTS or TYPE_FAULTS, or zero_tokens)."""
    k, v = make_chunk(heads, tokens, dims, seed, "float32", False)
    faults: dict[str, Callable[[], tuple[Any, Any]]] = {
        "k_2d": lambda: (k[0], v),
        "v_2d": lambda: (k, v[:, :, 0]),
        "k_4d": lambda: (k[None], v),
        "both_0d": lambda: (np.float32(1.0), np.float32(2.0)),
        "shapes_differ": lambda: (k, make_chunk(heads, tokens + 1, dims, seed, "float32", False)[1]),
        "wrong_heads": lambda: make_chunk(heads + 1, tokens, dims, seed, "float32", False),
        "wrong_dims": lambda: make_chunk(heads, tokens, dims + 1, seed, "float32", False),
        "zero_tokens": lambda: (k[:, :0], v[:, :0]),
        "k_bool": lambda: (k > 0, v),
        "v_bool": lambda: (k, v > 0),
        "k_complex": lambda: (k.astype(np.complex64), v),
        "v_complex128": lambda: (k, v.astype(np.complex128)),
        "k_object": lambda: (k.astype(object), v),
        "k_str": lambda: (k.astype(str), v),
        "v_bytes": lambda: (k, v.astype("S8")),
    }
    return faults[fault]()


class FaultCalls(CacheMachine):
    """How a fault is injected into one call; no rules of its own."""

    def seq_call(self, call: str, seq: Any, pinned: type[BaseException]) -> None:
        assert self.model is not None
        k, v = make_chunk(self.model.n_kv_heads, 1, self.model.d_head, 0, "float32")
        new_id = next(i for i in range(12, 100) if i not in self.model.tables)
        args: dict[str, tuple[str, tuple[Any, ...]]] = {
            "fork_parent": ("fork", (seq, new_id)),
            "append": ("append", (seq, 0, k, v)),
            "gather": ("gather", (seq, 0)),
            "seq_len": ("seq_len", (seq,)),
            "block_table": ("block_table", (seq,)),
            "free": ("free", (seq,)),
            "add_seq": ("add_seq", (seq,)),
        }
        name, call_args = args[call]
        self.call(name, *call_args, pinned=pinned)

    def layer_call(self, seq: int, call: str, layer: Any, pinned: type[BaseException]) -> None:
        if call == "append":
            k, v = make_chunk(self.model.n_kv_heads, 1, self.model.d_head, 0, "float32")
            self.call("append", seq, layer, k, v, pinned=pinned)
        else:
            self.call(call, seq, layer, pinned=pinned)

    def chunk_call(self, seq: int, layer: int, fault: str, tokens: int, seed: int, pinned: type[BaseException]) -> None:
        assert self.model is not None
        k, v = faulty_chunk(fault, self.model.n_kv_heads, tokens, self.model.d_head, seed)
        note(f"cache.append({seq}, {self.layer(layer)}, k, v)  # {fault}: k {getattr(k, 'dtype', type(k))} {np.shape(k)}, v {np.shape(v)}")
        self.touched.add(seq)
        self.call("append", seq, self.layer(layer), k, v, pinned=pinned)

    def constructor_call(self, which: int, bad: Any, pinned: type[BaseException]) -> None:
        """A constructor with one bad size; the cache in use is unaffected."""
        assert self.model is not None
        sizes: list[Any] = [self.model.num_blocks, self.model.block_size, self.model.n_layers, self.model.n_kv_heads, self.model.d_head]
        sizes[which] = bad
        written = f"PagedKVCache{tuple(sizes)!r}"
        assert_raises(pinned, f"the model's {written}", lambda: ModelKVCache(*sizes))
        assert_raises(pinned, written, lambda: self.wire.impl().PagedKVCache(*sizes))


class FaultMachine(FaultCalls):
    """CacheMachine plus every fault of the contract's error table that a driver can be sent, at any state; each changes nothing."""

    @rule(call=st.sampled_from(SEQ_CALLS), seq=st.sampled_from([12, 13, -1, 2**31]))
    @step
    def never_added_id(self, call: str, seq: int) -> None:
        self.seq_call(call, seq, KeyError)

    @rule(call=st.sampled_from(SEQ_CALLS), which=st.integers(0, 7))
    @step
    def freed_id(self, call: str, which: int) -> None:
        """The `which`-th (modulo) id that was freed and is not live again; nothing if there is none."""
        assert self.model is not None
        dead = sorted(self.freed - set(self.model.tables))
        if dead:
            self.seq_call(call, dead[which % len(dead)], KeyError)

    @rule(seq=seqs, child_is_parent=st.booleans(), other=seqs)
    @step
    def reused_id(self, seq: int, child_is_parent: bool, other: int) -> None:
        """add_seq of a live id, and fork into a live child (the parent itself, or another live one)."""
        self.call("add_seq", seq, pinned=ValueError)
        self.call("fork", seq, seq if child_is_parent else other, pinned=ValueError)

    @rule(seq=seqs, call=st.sampled_from(("append", "gather", "seq_len")), where=st.sampled_from(("L", "L+1", "-1", "-L", "-L-1", "huge")))
    @step
    def layer_out_of_range(self, seq: int, call: str, where: str) -> None:
        assert self.model is not None
        n = self.model.n_layers
        layer = {"L": n, "L+1": n + 1, "-1": -1, "-L": -n, "-L-1": -n - 1, "huge": 2**40}[where]
        self.layer_call(seq, call, layer, ValueError)

    @rule(seq=seqs, layer=LAYERS, fault=st.sampled_from(sorted(VALUE_FAULTS)), tokens=st.integers(1, 3), seed=SEEDS)
    @step
    def bad_chunk(self, seq: int, layer: int, fault: str, tokens: int, seed: int) -> None:
        """A chunk of the wrong rank or shape."""
        self.chunk_call(seq, layer, fault, tokens, seed, VALUE_FAULTS[fault])

    @rule(seq=seqs, layer=LAYERS)
    @step
    def empty_chunk(self, seq: int, layer: int) -> None:
        """A chunk of no positions, right in every other way: ValueError (a silent no-op hides an engine's bug),
        and nothing changes, not even a copy of a shared block it would start in.

        A rule of its own, not one of bad_chunk's faults, so that it is drawn as often as any rule: under the
        mutation profile bad_chunk ran 14 times in 40 examples, and never with this fault.
        """
        self.chunk_call(seq, layer, "zero_tokens", 1, 0, ValueError)

    @rule(which=st.integers(0, 4), bad=st.sampled_from([0, -1]))
    @step
    def size_below_one(self, which: int, bad: int) -> None:
        self.constructor_call(which, bad, ValueError)


class TypeFaultMachine(FaultCalls):
    """CacheMachine plus the contract's TypeError rows (the Python surface: a driver is sent integers and float16)."""

    @rule(call=st.sampled_from(SEQ_CALLS + ("add_seq", "fork_child")), seq=NOT_INTEGERS)
    @step
    def non_integer_id(self, call: str, seq: Any) -> None:
        assert self.model is not None
        if call == "fork_child":
            parents = self.live
            parent = parents[0] if parents else 0  # no live parent: then the parent's KeyError is what counts
            self.call("fork", parent, seq, pinned=TypeError if parents else KeyError)
        else:
            self.seq_call(call, seq, TypeError)

    @rule(seq=seqs, call=st.sampled_from(("append", "gather", "seq_len")), layer=NOT_INTEGERS)
    @step
    def non_integer_layer(self, seq: int, call: str, layer: Any) -> None:
        self.layer_call(seq, call, layer, TypeError)

    @rule(seq=seqs, layer=LAYERS, fault=st.sampled_from(sorted(TYPE_FAULTS)), tokens=st.integers(1, 3), seed=SEEDS)
    @step
    def non_real_chunk(self, seq: int, layer: int, fault: str, tokens: int, seed: int) -> None:
        self.chunk_call(seq, layer, fault, tokens, seed, TYPE_FAULTS[fault])

    @rule(which=st.integers(0, 4), bad=st.sampled_from([1.0, True, "2", None]))
    @step
    def non_integer_size(self, which: int, bad: Any) -> None:
        self.constructor_call(which, bad, TypeError)


