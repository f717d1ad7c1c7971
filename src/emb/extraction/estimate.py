"""What an extraction will cost, printed before it starts (``emb extract`` and ``--dry-run``).

Size: ``items × layers × poolings × hidden × itemsize`` raw; on disk, Blosc-LZ4 stores the four
identical poolings of a single-subtoken target about once and the float16 noise of the others
hardly at all (README "Layout and why"), so the estimate is ``raw × (f_multi + f_single / P)``
plus the coordinates (contexts as UTF-8, ×0.5 for their compression).

Memory (a runner with ``memory_lines``: transformers models): the weights per device from the
memory plan made before loading, and one batch at the suite's longest context; a context that
cannot fit alone is refused here, before the store is touched.

Time: the run's own runner (its device and dtype) embeds, after one untimed warm-up batch, a few
probe batches of the run's batch size drawn across the suites' length distribution (the contexts
around the 10th, 50th and 90th percentile of the lengths fed: whole contexts, or up to the
target's last subtoken for a causal model), each twice (the faster time kept).  A batch's time is fitted as ``a + b × padded
tokens`` (``a``: what a batch costs whatever its size, which dominates on a GPU; ``b``: the cost
of a token), and summed over the run's batches (its distinct contexts sorted by length, cut
into batches).  The write path's cost is measured on the widest probe's vectors (encoded as
shards and written once to a temporary file, :func:`emb.store.write_seconds`) and spread over the
writer threads: on a GPU it overlaps the model's work (the longer of the two counts), on a CPU it
shares the cores (the two add up).  To these come what a run costs whatever its size, measured
by a miniature run of the same kind (the suite's first two items into a temporary store: locks,
checks, layout, a block, the manifest; as a shard worker, the one that lays the suite out or
one that finds it laid out and settles), and what the run spent before the estimate (keying the
items, the store's checks, tokenising: counted as measured).  The range printed is the fit's
worst relative error on the probes, at least ±20 %, around what is still to come: timings on a
busy machine vary that much.

What it covers: this run's work, from the model loaded to the end (the estimate's own probes
left out): every context of the suites, or, with ``--shard``, the contexts first used in the
shard's windows (a resumed run is counted as if none of its blocks were written).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
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
    seconds_low: float = 0.0
    seconds_high: float = 0.0
    probed: int = 0
    seconds_writing: float = 0.0
    seconds_before: float = 0.0  # spent before the estimate (keys, checks, tokenising): measured
    seconds_fixed: float = 0.0  # what a run costs whatever its size (store setup, finishing)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """One line for the terminal."""
        return (
            f"estimate: {self.items:,} items ({self.distinct:,} distinct contexts, "
            f"{self.tokens:,} tokens) × {self.layers} layers × {self.poolings} poolings × "
            f"{self.hidden} → {_size(self.bytes_raw)} raw, ~{_size(self.bytes_disk)} on disk; "
            f"~{_duration(self.seconds)}"
            + (f" ({_duration(self.seconds_low)}–{_duration(self.seconds_high)})"
               if self.seconds_high > self.seconds_low else "")
            + f" at {self.tokens_per_second:,.0f} tokens/s"
            + (f"; {self.contexts_cut:,} long contexts cut to the model's positions"
               if self.contexts_cut else "")
            + "".join("\n" + line for line in self.memory)
        )


    def versus(self, seconds: float) -> str:
        """The estimate against the extraction's actual time, for the run's summary."""
        inside = self.seconds_low <= seconds <= self.seconds_high
        return (f"estimated ~{_duration(self.seconds)} "
                f"({_duration(self.seconds_low)}–{_duration(self.seconds_high)}), took "
                f"{_duration(seconds)} ({seconds / self.seconds:.2f} × the estimate"
                f"{'' if inside else ', outside its range'})" if self.seconds else
                f"took {_duration(seconds)}")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"  # pragma: no cover


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
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
    seconds_before: float = 0.0,
    fixed: Callable[[], tuple[float, int]] | None = None,
) -> Estimate:
    """Size and time of extracting the given suites' (tokenised) contexts.

    ``seconds_before``: what the run spent before the estimate (counted as is); ``fixed``:
    measures what the run costs besides its model and write work (a miniature run of the same
    kind: store setup, locks, markers, finishing), called after the probes, returning its
    seconds and the contexts it computed in one embed call, whose model time (as the fit prices
    it, batches of the shortest contexts) is not counted twice.
    """
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
    seconds = spread = writing = fixed_seconds = 0.0
    probed = 0
    if len(flat):
        subset = {} if list(layers) == list(range(int(info.n_layers) + 1)) else {"layers": layers}
        seconds, spread, probed, sample, price = _time(
            runner, flat, lengths, poolings=poolings, batch_size=batch_size,
            storage_dtype=storage_dtype, subset=subset,
        )
        if fixed is not None:
            measured, computed = fixed()
            fixed_seconds = max(0.0, measured - price(computed))
        if isinstance(sample, np.ndarray) and sample.ndim == 4 and len(sample):
            from emb.extraction.settings import writer_threads
            from emb.store import write_seconds

            try:
                writing = items * write_seconds(sample) / len(sample) / writer_threads()
            except OSError:  # no room in the temporary directory (the store may be elsewhere):
                writing = 0.0  # not measured, as the miniature run where it cannot be made
            # the writer threads overlap a GPU's work, and share a CPU's cores with the model
            on_gpu = str(getattr(info, "device", "cpu")).startswith("cuda")
            seconds = max(seconds, writing) if on_gpu else seconds + writing
    seconds += fixed_seconds
    tokens = int(lengths.sum())
    return Estimate(
        items=items, distinct=len(flat), tokens=tokens, layers=len(layers),
        poolings=len(poolings), hidden=int(info.hidden_size), bytes_raw=int(raw),
        bytes_disk=disk, seconds=seconds_before + seconds,
        tokens_per_second=tokens / seconds if seconds else 0.0,
        contexts_cut=sum(getattr(e, "window", None) is not None for e in flat),
        memory=memory,
        # what was spent before is known; the range is that of what is predicted
        seconds_low=seconds_before + seconds / (1 + spread),
        seconds_high=seconds_before + seconds * (1 + spread), probed=probed,
        seconds_writing=writing, seconds_before=seconds_before, seconds_fixed=fixed_seconds,
    )


#: Where the probe batches sit in the distinct contexts sorted by length.
PROBES = (0.1, 0.5, 0.9)
#: The narrowest range printed around the estimate (relative): a busy machine varies that much.
MIN_SPREAD = 0.2


def _time(
    runner: Any, flat: Sequence[Any], lengths: np.ndarray, *, poolings: Sequence[str],
    batch_size: int, storage_dtype: str, subset: dict[str, Any],
) -> tuple[float, float, int, Any, Callable[[int], float]]:
    """(seconds, relative spread, contexts timed, the widest probe's vectors, the fitted time of
    embedding n of the shortest contexts) of embedding every context of ``flat``."""
    order = np.argsort(lengths, kind="stable")
    n = len(order)
    rows = min(batch_size, n)
    # the run's batches: sorted by length and cut (within each window, in the pipeline; the
    # padding differs by little), each costing its rows × its widest context
    widths = lengths[order]
    batches = [(len(widths[i:i + batch_size]), int(widths[min(n, i + batch_size) - 1]))
               for i in range(0, n, batch_size)]
    probes = []
    for q in PROBES:
        start = min(max(0, int(q * n) - rows // 2), n - rows)
        probes.append(order[start : start + rows])
    vectors: list[Any] = [None]

    def embed(chosen: np.ndarray) -> float:
        t0 = time.perf_counter()
        vectors[0] = runner.embed([flat[i] for i in chosen], poolings=poolings, batch_size=batch_size,
                                  out_dtype=storage_dtype, **subset)
        return time.perf_counter() - t0

    embed(probes[-1])  # warm-up at the widest probe's shapes (kernels, allocator, caches)
    sample = vectors[0]
    # each probe timed twice, the faster kept: a pause of a busy machine is not the model's cost
    first = [embed(chosen) for chosen in probes]
    timed = [(len(chosen) * int(lengths[chosen].max()), min(once, embed(chosen)))
             for chosen, once in zip(probes, first, strict=True)]
    x = np.array([t for t, _ in timed], dtype=float)
    y = np.array([s for _, s in timed], dtype=float)
    if np.ptp(x) > 0:
        b, a = np.polyfit(x, y, 1)
    else:
        a, b = 0.0, float(y.mean() / max(x.mean(), 1.0))
    if b < 0 or a < 0:  # noise: fall back to one rate per padded token (through the origin)
        a, b = 0.0, float(y.sum() / max(x.sum(), 1.0))
    fitted = a + b * x
    error = float(np.max(np.abs(fitted - y) / np.maximum(y, 1e-9)))
    seconds = float(sum(a + b * r * w for r, w in batches))

    def price(n: int) -> float:
        return float(sum(a + b * min(batch_size, n - i) * int(widths[0]) for i in range(0, n, batch_size)))

    return seconds, max(MIN_SPREAD, error), int(sum(len(p) for p in probes)), sample, price
