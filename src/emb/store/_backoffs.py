"""The out-of-memory back-offs of the runs that wrote a suite, kept in its provenance.

A run of ``emb extract`` whose batches ran out of device memory (the runner halved them, see
:mod:`emb.backends.backoff`) leaves one *run record*::

    {"run": "20261126T225501-1a2b3c4d", "started": "2026-11-26T22:55:01+00:00",
     "shard": null, "batch_size": 64, "device": "cuda:0",
     "halvings": [{"tokens": 182, "batch": 64, "to": 32}, {"tokens": 182, "batch": 32, "to": 16}],
     "batches": [{"tokens_from": 182, "tokens_to": null, "batch": 16}],
     "stopped": null}

``halvings``: each halving (the padded length of the batch, its size, the size it was cut to);
``batches``: the batch size that ran from each length on (``tokens_to`` null: and every longer
one), the sizes below the first length being ``batch_size``; ``stopped``: a context that ran out
of memory alone and ended the run (its ``tokens`` and the ``message``), else null.

While a suite is being written, each run keeps its record in an object of its own,
``<suite>/_progress/backoffs.<run>.json`` (rewritten as the run learns more, before the blocks
it computed are marked done), so shard workers never write the same object and a run that stops
keeps its record for the resumed one.  When the suite is completed, the records are folded into
the group's attribute ``oom_backoffs`` (:data:`emb.schemas.datamodel.ATTR_BACKOFFS`), oldest
first, with the completion flag: plain xarray and every analysis' provenance read them there.
A suite no run of which backed off has neither: its bytes are those of a store written before
this record existed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from emb.schemas import datamodel as dm
from emb.store._nodes import BadMetadata, named_children, read_json
from emb.store._zarr import as_buffer
from emb.store._zarr import sync as zarr_sync

__all__ = [
    "backoff_runs", "delete_pending", "describe_runs", "merged", "pending_runs", "write_run",
]

_PREFIX = "backoffs."
_SUFFIX = ".json"


def _key(name: str, run: str) -> str:
    return f"{name}/{dm.PROGRESS_GROUP}/{_PREFIX}{run}{_SUFFIX}"


def write_run(zstore: Any, name: str, record: Mapping[str, Any]) -> None:
    """Write (or rewrite) the run record ``record`` of suite ``name`` (its own object)."""
    data = json.dumps(dict(record), sort_keys=True).encode()
    zarr_sync(zstore.set(_key(name, str(record["run"])), as_buffer(data)))


def _pending_names(zstore: Any, name: str) -> list[str]:
    # a backend that cannot list (HTTP): the group attribute alone
    return named_children(zstore, f"{name}/{dm.PROGRESS_GROUP}", starts=_PREFIX, ends=_SUFFIX)


def pending_runs(zstore: Any, name: str) -> list[dict[str, Any]]:
    """The run records of suite ``name`` kept in objects of their own (not yet folded into the
    group attribute); a record that does not parse is left out."""
    out = []
    for entry in _pending_names(zstore, name):
        with contextlib.suppress(BadMetadata):
            doc = read_json(zstore, f"{name}/{dm.PROGRESS_GROUP}/{entry}")
            if doc is not None and "run" in doc:
                out.append(doc)
    return out


def merged(*sources: Sequence[Any]) -> list[dict[str, Any]]:
    """Run records of several sources, each run once (the later source's copy), oldest first."""
    runs: dict[str, dict[str, Any]] = {}
    for source in sources:
        for record in source or ():
            if isinstance(record, Mapping) and "run" in record:
                runs[str(record["run"])] = dict(record)
    return sorted(runs.values(), key=lambda r: (str(r.get("started", "")), str(r["run"])))


def backoff_runs(zstore: Any, name: str, attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every run record of suite ``name``: those of its attribute and those not yet folded in."""
    stored = attrs.get(dm.ATTR_BACKOFFS)
    return merged(stored if isinstance(stored, list) else [], pending_runs(zstore, name))


def delete_pending(zstore: Any, name: str) -> None:
    """Delete the run records' own objects (once folded into the group attribute)."""
    for entry in _pending_names(zstore, name):
        with contextlib.suppress(FileNotFoundError, KeyError):
            zarr_sync(zstore.delete(f"{name}/{dm.PROGRESS_GROUP}/{entry}"))


def describe_runs(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per run record, for ``emb info``: when, which shard, the batch sizes that ran
    from which length on, and how the run ended when a context failed alone."""
    lines = []
    for record in runs:
        when = str(record.get("started", "?"))[:16].replace("T", " ")
        shard = record.get("shard")
        who = f"run {when}" + (f" ({shard})" if shard else "")
        halvings = record.get("halvings") or []
        batch = record.get("batch_size")
        ranges = []
        for entry in record.get("batches") or []:
            upper = entry.get("tokens_to")
            span = (f"{entry.get('tokens_from')}–{upper} tokens" if upper is not None
                    else f"≥{entry.get('tokens_from')} tokens")
            ranges.append(f"{entry.get('batch')} at {span}")
        how = (f"out of memory, batch {batch} halved {len(halvings)} time(s)" if halvings else
               f"batch {batch} cut to the sizes learnt where an earlier suite on the same "
               "loaded model ran out of memory")
        text = f"{who}: {how}; batches that ran: {', '.join(ranges) if ranges else batch}"
        stopped = record.get("stopped")
        if isinstance(stopped, Mapping):
            text += (f"; stopped: one context of {stopped.get('tokens')} tokens ran out of "
                     "memory alone")
        lines.append(text)
    return lines
