"""The table every run prints, the JSON it writes, and the memory plot."""

from __future__ import annotations

from .sizes import B, TARGETS, Sizes
from .timing import Result


def met(key: str, value: float) -> str:
    op, target = TARGETS[key]
    if target is None:
        return "reported"
    ok = value <= target if op == "<=" else value >= target
    return "met" if ok else "MISSED"


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def table(results: list[Result]) -> str:
    head = ("key", "value", "target", "verdict", "paged median (min)", "against median (min)", "what")
    rows = [head]
    for r in results:
        op, target = TARGETS[r.key]
        if r.paged is not None and r.ref is not None:
            paged = f"{fmt_time(r.paged.median / r.per_paged)} ({fmt_time(r.paged.minimum / r.per_paged)})"
            ref = f"{r.ref_name}: {fmt_time(r.ref.median / r.per_ref)} ({fmt_time(r.ref.minimum / r.per_ref)})"
        else:
            paged, ref = "", ""
        rows.append((r.key, f"{r.value:.3f}", f"{op} {target}" if target is not None else "-",
                     met(r.key, r.value), paged, ref, r.unit or r.note))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    return "\n".join(lines)


def plot(held: dict[str, list[int]], path: str, s: Sizes) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    live = list(range(1, len(held["paged"]) + 1))
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    ax.plot(live, [b / 2**30 for b in held["contiguous"]], label=f"contiguous (max_len {s.max_len})")
    ax.plot(live, [b / 2**30 for b in held["paged"]], label=f"paged (block_size {B})")
    ax.set_xlabel("live sequences")
    ax.set_ylabel("memory held (GiB)")
    ax.set_title(f"SmolLM2 KV cache, lengths log-uniform {s.batch_lo}..{s.batch_hi}", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
