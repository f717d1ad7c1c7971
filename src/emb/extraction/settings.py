"""The settings of an extraction and the report of one suite's: the records written to the store
(:class:`ExtractionSettings`, :class:`SuiteReport`) and the parsers of the user's choices
(poolings, dtypes, batch size, layers).  Torch-free.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from emb._documents import show
from emb.errors import EmbError
from emb.schemas import datamodel as dm

__all__ = ["ExtractionSettings", "SuiteReport", "parse_layers", "parse_settings"]


@dataclass(frozen=True, kw_only=True)
class ExtractionSettings:
    """How embeddings were computed and stored (written to each suite's attributes)."""

    poolings: tuple[str, ...] = dm.POOLINGS
    dtype: str = "float32"
    storage_dtype: str = "float16"
    batch_size: int = 64
    device: str = "auto"
    bos: bool | None = None
    bos_token: str | None = None  # put first instead of the tokenizer's BOS (--bos-token)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["poolings"] = list(self.poolings)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExtractionSettings:
        fields = {k: d[k] for k in ("dtype", "storage_dtype", "batch_size", "device", "bos", "bos_token") if k in d}
        return cls(poolings=tuple(d.get("poolings", dm.POOLINGS)), **fields)


@dataclass(frozen=True, kw_only=True)
class SuiteReport:
    """What one suite's extraction did."""

    name: str
    n_items: int
    n_unique: int
    n_computed: int
    n_copied: int
    blocks_written: int
    blocks_total: int
    already_complete: bool
    seconds: float
    n_unknown_targets: int = 0
    unknown_examples: tuple[str, ...] = ()
    #: out-of-memory halvings of the suite's batches: dicts of tokens, batch, to
    backoffs: tuple[dict[str, int], ...] = ()
    #: blocks this run was to write: every block, or its shard's (with ``--shard``)
    blocks_assigned: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_settings(
    poolings: Sequence[str], dtype: str, storage_dtype: str, batch_size: int
) -> tuple[str, ...]:
    pools = tuple(poolings)
    bad = [p for p in pools if p not in dm.POOLINGS]
    if bad or not pools or len(set(pools)) != len(pools):
        raise EmbError(
            f"poolings must be distinct names among {list(dm.POOLINGS)}; got {list(pools)}"
        )
    if dtype not in ("float32", "float16", "bfloat16", "auto"):
        raise EmbError(f"dtype must be float32, float16, bfloat16 or auto; got {dtype!r}")
    if storage_dtype not in ("float16", "float32"):
        raise EmbError(f"storage dtype must be float16 or float32; got {storage_dtype!r}")
    if batch_size < 1:
        raise EmbError(f"batch size must be >= 1; got {batch_size}")
    return pools


#: One layer of ``--layers``: ASCII digits with an optional sign.
_LAYER = re.compile(r"[+-]?[0-9]+")


def parse_layers(spec: str | Sequence[int] | None, n_blocks: int) -> list[int]:
    """The stored layers (0..L, increasing) from ``"all"``, ``"0,6,-1"`` or a list of ints.

    Raises
    ------
    EmbError
        A layer outside -(L+1)..L, or a value that is not an integer.
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "all")):
        return list(range(n_blocks + 1))
    raw = spec.split(",") if isinstance(spec, str) else list(spec)
    out = set()
    for value in raw:
        text = str(value).strip()
        # ASCII digits with an optional sign: int() would also take "１", "٢" and "1_0" (as 10)
        if isinstance(value, bool) or not _LAYER.fullmatch(text):
            raise EmbError(f"layers must be 'all' or integers like '0,6,-1'; got {show(value)}")
        layer = int(text)
        if not -(n_blocks + 1) <= layer <= n_blocks:
            raise EmbError(
                f"layer {layer} does not exist: the model has layers 0..{n_blocks} "
                f"(or -1..-{n_blocks + 1} from the top)"
            )
        out.add(layer % (n_blocks + 1))
    if not out:
        raise EmbError("no layers given; pass 'all' or a list such as '0,6,-1'")
    return sorted(out)


def writer_threads() -> int:
    """Writer threads: each encodes and writes one block at a time (Blosc and the file writes
    release the GIL); as many as the cores this process may use, 2 to 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(2, min(8, cores))
