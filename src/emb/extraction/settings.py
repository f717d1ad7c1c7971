"""The settings of an extraction: the one frozen :class:`ExtractionSettings` of a run, parsed
once from the options given (:func:`parse_settings`, by their declarations in
:mod:`emb.extraction.options`) and handed down whole to the pipeline, the runner and the store's
write handle; what a suite's extraction attributes record of it (:meth:`ExtractionSettings.to_dict`);
and the report of one suite's extraction (:class:`SuiteReport`). Torch-free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from emb.errors import EmbError, OptionError
from emb.extraction.options import (
    BATCH_SIZE,
    BLOCK_SIZE,
    BOS,
    BOS_TOKEN,
    DEVICE,
    DRY_RUN,
    DTYPE,
    GROUP_NAMES,
    LAYERS,
    OPTIONS,
    OVERWRITE,
    POOLINGS,
    SHARD,
    STORAGE_DTYPE,
    WINDOW_BLOCKS,
)
from emb.files.documents import show
from emb.text import unknown_names

if TYPE_CHECKING:  # pragma: no cover
    from emb.extraction.shards import Shard

__all__ = ["RECORDED", "ExtractionSettings", "SuiteReport", "parse_layers", "parse_settings"]

#: The settings a suite's extraction attributes record (its identity: a stored group must match
#: them), in the order written.
RECORDED = ("poolings", "dtype", "storage_dtype", "batch_size", "device", "bos", "bos_token")


@dataclass(frozen=True, kw_only=True)
class ExtractionSettings:
    """The settings of one extraction, each field an option of :data:`emb.extraction.options.OPTIONS`
    (its default the record's).

    Made by :func:`parse_settings` from what a run was given; the pipeline then sets what the
    loaded model decides (``dtype="auto"``'s dtype, the device, the poolings a runner stores, each
    suite's BOS policy) with :func:`dataclasses.replace`. :meth:`to_dict` is what each suite's
    extraction attributes record (:data:`RECORDED`); the other fields say how this run writes.
    """

    group_names: tuple[str, ...] | None = GROUP_NAMES.default
    poolings: tuple[str, ...] = POOLINGS.default
    dtype: str = DTYPE.default
    storage_dtype: str = STORAGE_DTYPE.default
    batch_size: int = BATCH_SIZE.default
    device: str = DEVICE.default
    shard: Shard | None = SHARD.default
    bos: bool | None = BOS.default
    bos_token: str | None = BOS_TOKEN.default  # put first instead of the tokenizer's BOS
    overwrite: bool = OVERWRITE.default
    layers: tuple[int, ...] | None = LAYERS.default  # None: all
    dry_run: bool = DRY_RUN.default
    block_size: int | None = BLOCK_SIZE.default  # None: the store's rule
    window_blocks: int = WINDOW_BLOCKS.default

    def to_dict(self) -> dict[str, Any]:
        """The recorded settings (:data:`RECORDED`), as a suite's extraction attributes hold them."""
        return {"poolings": list(self.poolings), **{k: getattr(self, k) for k in RECORDED[1:]}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ExtractionSettings:
        """The recorded settings of a suite's extraction attributes (the others: their defaults)."""
        fields = {k: d[k] for k in RECORDED[1:] if k in d}
        return cls(poolings=tuple(d.get("poolings", POOLINGS.default)), **fields)

    @property
    def shard_label(self) -> str | None:
        """The shard in the store's file names (``shard-2-of-8``), or None."""
        return self.shard.label if self.shard is not None else None


#: The records by keyword.
_BY_NAME = {option.name: option for option in OPTIONS}


def parse_settings(given: Mapping[str, Any] | None = None, /, **options: Any) -> ExtractionSettings:
    """The settings of a run from the options given (``given`` and ``options`` together; None:
    not given, the default): the one validator of the extraction's options.

    Each value is parsed by its record (:meth:`emb.options.Option.parse`); then what two options
    decide together: ``bos_token`` implies ``bos=True`` (and is refused with ``bos=False``), and
    ``shard`` is refused with ``overwrite``.

    Raises
    ------
    OptionError
        An option the pipeline does not take, a value its record refuses (the record's one
        message, as from the CLI), or two options that contradict each other.
    """
    values = {**(given or {}), **options}
    unknown = sorted(set(values) - set(_BY_NAME))
    if unknown:
        raise OptionError(unknown_names("option", unknown, list(_BY_NAME), "the extraction's options"))
    parsed: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        option = _BY_NAME[name]
        try:
            parsed[name] = option.parse(value)
        except OptionError as err:
            raise OptionError(str(err), option=option.cli_flag if option.cli else None) from None
    if parsed.get("bos_token") is not None:
        if parsed.get("bos") is False:
            raise OptionError(
                f"--bos-token {show(parsed['bos_token'])} asks for that token first and --no-bos "
                "for no BOS token; give one of them")
        parsed["bos"] = True
    if parsed.get("shard") is not None and parsed.get("overwrite"):
        raise OptionError(
            "--overwrite cannot be combined with --shard: every worker would delete what the "
            "others wrote; replace the suite once without --shard (or delete it), then start the "
            "shards")
    return ExtractionSettings(**parsed)


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


def parse_layers(spec: str | Sequence[int] | None, n_blocks: int) -> list[int]:
    """The stored layers (0..L, increasing) from ``"all"``/None, ``"0,6,-1"`` or a list of ints
    (negative: from the top), for a model of ``n_blocks`` blocks.

    Raises
    ------
    OptionError
        A value :data:`~emb.extraction.options.LAYERS` refuses (not integers).
    EmbError
        A layer outside -(L+1)..L.
    """
    layers = LAYERS.parse(spec)
    if layers is None:
        return list(range(n_blocks + 1))
    out = set()
    for layer in layers:
        if not -(n_blocks + 1) <= layer <= n_blocks:
            raise EmbError(
                f"layer {layer} does not exist: the model has layers 0..{n_blocks} "
                f"(or -1..-{n_blocks + 1} from the top)"
            )
        out.add(layer % (n_blocks + 1))
    return sorted(out)


def writer_threads() -> int:
    """Writer threads: each encodes and writes one block at a time (Blosc and the file writes
    release the GIL); as many as the cores this process may use, 2 to 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(2, min(8, cores))
