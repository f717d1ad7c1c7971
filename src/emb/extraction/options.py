"""The extraction pipeline's options, declared once: :data:`OPTIONS`.

Every keyword the pipeline takes is an :class:`~emb.options.Option` record here, its default in
the record and nowhere else; ``dtype``, ``device`` and ``batch_size`` are the ground floor's
(:mod:`emb.options`), which the backends' runners read too. From these records alone

- ``emb extract`` generates its flags (``--pooling``, ``--dtype``, ``--batch-size`` …:
  :func:`emb.cli._options.setting_option`; a record with ``cli=False`` is a Python keyword only);
- :func:`emb.extraction.settings.parse_settings` parses what a run was given, once, at the front
  door, into the one frozen :class:`~emb.extraction.settings.ExtractionSettings` handed down to
  the pipeline, the runner and the store's write handle; a bad value gets the record's one
  message, the same from Python and the CLI: ``--batch-size (batch_size= in Python) must be an
  integer >= 1; got 0``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from emb.extraction.shards import MAX_SHARDS, parse_shard
from emb.options import BATCH_SIZE, DEVICE, DTYPE, Option
from emb.schemas import datamodel as dm

__all__ = [
    "BATCH_SIZE",
    "BLOCK_SIZE",
    "BOS",
    "BOS_TOKEN",
    "DEVICE",
    "DRY_RUN",
    "DTYPE",
    "GROUP_NAMES",
    "LAYERS",
    "OPTIONS",
    "OVERWRITE",
    "POOLINGS",
    "SHARD",
    "STORAGE_DTYPE",
    "WINDOW_BLOCKS",
    "layer_spec",
]


# -- the parsers of values no type, choices and bounds describe ------------------------------------
def _names(value: Any) -> tuple[str, ...] | None:
    """Group names: one name or several (each checked as a store group when the suites are known)."""
    values = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in values):
        raise TypeError(value)
    return tuple(values) or None


def _poolings(value: Any) -> tuple[str, ...]:
    """Distinct pooling names, given as a list or comma-separated (``"mean, last"``; the CLI's
    repeated ``--pooling`` too)."""
    values = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in values):
        raise TypeError(value)
    names = [p.strip() for v in values for p in v.split(",") if p.strip()]
    if not names or len(set(names)) != len(names) or not set(names) <= set(dm.POOLINGS):
        raise ValueError(value)
    return tuple(names)


#: One layer of ``--layers``: ASCII digits with an optional sign (int() would also take "１", "٢"
#: and "1_0" as 10).
_LAYER = re.compile(r"[+-]?[0-9]+", re.ASCII)


def layer_spec(value: str | Iterable[int]) -> tuple[int, ...] | None:
    """The layers asked for, as integers (negative: from the top), or None for ``"all"``; which
    exist is known once the model is (:func:`emb.extraction.settings.parse_layers`)."""
    if isinstance(value, str) and value.strip().lower() in ("", "all"):
        return None
    raw = value.split(",") if isinstance(value, str) else list(value)
    if not raw or any(isinstance(v, bool) or not _LAYER.fullmatch(str(v).strip()) for v in raw):
        raise ValueError(value)
    return tuple(int(str(v).strip()) for v in raw)


def _token(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(value)
    return value


# -- the records, in the order of `emb extract --help` -------------------------------------------------
#: The store group each suite is written to.
GROUP_NAMES = Option(name="group_names", flag="--name", multiple=True, parser=_names,
                     expects="one store group name per suite",
                     help="Group name per suite (default: the suite's name).")
#: The subword poolings stored (a subset of the data model's, in the order given).
POOLINGS = Option(name="poolings", flag="--pooling", multiple=True, default=dm.POOLINGS,
                  parser=_poolings, expects=f"distinct names among {', '.join(dm.POOLINGS)}",
                  help="Subword pooling to store: first, last, mean or max; repeatable or "
                       "comma-separated.")
#: The stored vectors' dtype.
STORAGE_DTYPE = Option(name="storage_dtype", choices=("float16", "float32"), default="float16",
                       help="Stored vector dtype (see README for the precision impact).")
#: Shard I of N of each suite's compute windows (:mod:`emb.extraction.shards`).
SHARD = Option(name="shard", metavar="I/N", parser=parse_shard,
               expects=f"I/N with whole numbers 1 <= I <= N <= {MAX_SHARDS:,} (e.g. 2/8; a SLURM "
                       "array 0..N-1 passes $((SLURM_ARRAY_TASK_ID + 1))/N)",
               help="Compute and write only shard I of N (1-based) of each suite; run N workers "
                    "(e.g. a SLURM array or one per GPU) with the same command and N. The last "
                    "one to finish completes the suite; a killed shard resumes when re-run.")
#: The BOS policy: None, the tokenizer's own behaviour (a ``--bos/--no-bos`` pair on the CLI).
BOS = Option(name="bos", type="bool", default=None,
             help="Force / suppress a BOS token (default: the tokenizer's own behaviour).")
#: A token of the vocabulary put first instead of the tokenizer's BOS token (implies ``bos``).
BOS_TOKEN = Option(name="bos_token", metavar="TOKEN", parser=_token,
                   expects="a token of the model's vocabulary, as its tokenizer writes it",
                   help="Put TOKEN first instead of the tokenizer's BOS token (implies --bos), "
                        "e.g. '<|endoftext|>' for a model whose BOS token is a chat marker such "
                        "as '<|im_start|>'; one token of the vocabulary, as the tokenizer writes "
                        "it.")
#: Replace a suite's group that holds another definition.
OVERWRITE = Option(name="overwrite", type="bool", default=False,
                   help="Replace the suite's group (and only it) if it holds another definition.")
#: The layers stored (None: all); the forward pass stops after the highest.
LAYERS = Option(name="layers", parser=layer_spec,
                expects="'all' or integers like '0,6,-1' (negative: from the top)",
                help="Layers to store: 'all' (default) or e.g. '0,6,-1' (negative = from the "
                     "top); the forward pass stops after the highest.")
#: Estimate and write nothing.
DRY_RUN = Option(name="dry_run", type="bool", default=False,
                 help="Build the suites, tokenise, print the estimated store size and time; "
                      "write nothing.")
#: Items per shard of the store (None: :func:`emb.store.suite_writer.block_size_for`'s rule).
BLOCK_SIZE = Option(name="block_size", type="int", low=1, high=math.inf, cli=False,
                    help="Items per shard (default: a power of two <= 512 keeping a shard <= "
                         "16 MiB).")
#: Blocks computed together: one ``embed`` call sorts their contexts by length, so batches carry
#: less padding than within one block (at 10,000 "This is WORD." items, sorting block by block
#: fed 5.0% more tokens than the contexts hold, sorting over the whole suite 0.25%).  Memory: at
#: most ``QUEUE_WINDOWS + 1`` windows of shards of <= 16 MiB (:mod:`emb.extraction.pipeline`).
#: Stored in the suite's extraction attributes, so a resumed run cuts the same windows (stores
#: written before this setting existed resume with windows of one block).
WINDOW_BLOCKS = Option(name="window_blocks", type="int", low=1, high=math.inf, default=8,
                       cli=False,
                       help="Blocks computed together in one length-sorted pass; a resumed "
                            "suite keeps the value it was started with.")

#: Every option of the extraction pipeline, in the order of ``emb extract --help``.
OPTIONS: tuple[Option, ...] = (
    GROUP_NAMES, POOLINGS, DTYPE, STORAGE_DTYPE, BATCH_SIZE, DEVICE, SHARD, BOS, BOS_TOKEN,
    OVERWRITE, LAYERS, DRY_RUN, BLOCK_SIZE, WINDOW_BLOCKS,
)
