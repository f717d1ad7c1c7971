"""What an extraction will cost, printed before it starts (``emb extract`` and ``--dry-run``).

Size: ``items × layers × poolings × hidden × itemsize`` raw; on disk, Blosc-LZ4 stores the four
identical poolings of a single-subtoken target about once and the float16 noise of the others
hardly at all (README "Layout and why"), so the estimate is ``raw × (f_multi + f_single / P)``
plus the coordinates (contexts as UTF-8, ×0.5 for their compression).

Memory (a runner with ``memory_lines``: transformers models): the weights per device from the
memory plan made before loading, and one batch at the suite's longest context; a context that
cannot fit alone is refused here, before the store is touched.

Time: the model embeds a sample of up to 32 of the suite's own contexts (the median lengths) and
the rate in tokens per second is applied to every distinct context's tokens (up to the target's
last subtoken for a causal model).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Estimate", "estimate_extraction"]


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """An extraction's size and time, before it runs."""

    items: int
    distinct: int
    tokens: int
    layers: int
    poolings: int
    hidden: int
    bytes_raw: int
    bytes_disk: int
    seconds: float
    tokens_per_second: float
    contexts_cut: int
    memory: tuple[str, ...] = ()  # the runner's memory plan and one batch's memory, if it has one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for the terminal."""
        return (
            f"estimate: {self.items:,} items ({self.distinct:,} distinct contexts, "
            f"{self.tokens:,} tokens) × {self.layers} layers × {self.poolings} poolings × "
            f"{self.hidden} → {_size(self.bytes_raw)} raw, ~{_size(self.bytes_disk)} on disk; "
            f"~{_duration(self.seconds)} at {self.tokens_per_second:,.0f} tokens/s"
            + (f"; {self.contexts_cut:,} long contexts cut to the model's positions"
               if self.contexts_cut else "")
            + "".join("\n" + line for line in self.memory)
        )


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"  # pragma: no cover


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_extraction(
    runner: Any,
    encodings: Sequence[Sequence[Any]],
    n_items: Sequence[int],
    *,
    layers: Sequence[int],
    poolings: Sequence[str],
    storage_dtype: str,
    batch_size: int,
    sample: int = 32,
) -> Estimate:
    """Size and time of extracting the given suites' (tokenised) contexts."""
    info = runner.info
    causal = bool(getattr(info, "causal", False))
    flat = [e for group in encodings for e in group]
    lengths = np.asarray([(e.token_end if causal else e.n_tokens) if hasattr(e, "n_tokens") else 1
                          for e in flat], dtype=np.int64)
    single = np.asarray([getattr(e, "n_subtokens", 1) == 1 for e in flat], dtype=bool)
    items = int(sum(n_items))
    itemsize = np.dtype(storage_dtype).itemsize
    per_item = len(layers) * len(poolings) * int(info.hidden_size) * itemsize
    raw = items * per_item
    f_single = float(single.mean()) if len(single) else 0.0
    vectors = raw * ((1 - f_single) + f_single / max(len(poolings), 1))
    context_bytes = int(lengths.sum()) * 4 * 0.5  # ~4 characters per token, LZ4 halves them
    disk = int(vectors + context_bytes)
    memory: tuple[str, ...] = ()
    if len(flat) and callable(getattr(runner, "memory_lines", None)):  # refuses what cannot fit
        memory = tuple(runner.memory_lines(
            batch=min(batch_size, len(flat)), length=int(lengths.max()), layers=layers))
    rate = 0.0
    if len(flat):
        order = np.argsort(lengths, kind="stable")
        middle = order[max(0, len(order) // 2 - sample // 2):][:sample]
        chosen = [flat[i] for i in middle]
        subset = {} if list(layers) == list(range(int(info.n_layers) + 1)) else {"layers": layers}
        runner.embed(chosen[:2], poolings=poolings, batch_size=batch_size, **subset)  # warm up
        t0 = time.perf_counter()
        runner.embed(chosen, poolings=poolings, batch_size=batch_size, **subset)
        elapsed = max(time.perf_counter() - t0, 1e-6)
        rate = float(lengths[middle].sum()) / elapsed
    tokens = int(lengths.sum())
    return Estimate(
        items=items, distinct=len(flat), tokens=tokens, layers=len(layers),
        poolings=len(poolings), hidden=int(info.hidden_size), bytes_raw=int(raw),
        bytes_disk=disk, seconds=tokens / rate if rate else 0.0, tokens_per_second=rate,
        contexts_cut=sum(getattr(e, "window", None) is not None for e in flat),
        memory=memory,
    )
