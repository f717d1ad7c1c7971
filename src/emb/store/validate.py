"""Validation: is a store complete, incomplete (resumable) or corrupt, and why.

Statuses and the exit codes of ``emb validate``:

- ``complete`` (0): every suite finished, and holds what its manifest lists;
- ``incomplete`` (1): a run was interrupted, or nothing was extracted yet: re-running the same
  ``emb extract`` command finishes it;
- ``corrupt`` (2): damage no interrupted run explains (a deleted or garbled metadata file, a
  missing or truncated shard, a marker set over a missing block, a suite written by a newer emb),
  or a path that is not an emb store.  Re-running does not repair it.

A plain check reads only metadata, done-markers and object sizes; ``deep`` also reads every byte
(checksums of the manifest) and decodes every block (finite values).  Suites completed before the
manifest existed (store schema 1) are checked the old way, and the report says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import zarr

from emb.errors import CorruptStoreError, RemoteStoreError, StoreError
from emb.schemas import datamodel as dm
from emb.store._compat import coordinate_names, manifest_written
from emb.store._location import is_url, local_path, open_zarr_store
from emb.store._nodes import BadMetadata, child_names, object_sizes, read_json, read_jsons
from emb.store._zarr import arrays_from_metadata, chunk_key, dimension_names
from emb.store.manifest import check_manifest
from emb.store.names import is_group_name
from emb.store.shards import (
    DONE,
    ShardProgress,
    describe_shards,
    read_markers,
    read_record,
    shard_progress,
)

__all__ = [
    "Status",
    "ValidationReport",
    "consolidated_problems",
    "is_group_doc",
    "looks_like_suite",
    "read_done",
    "root_attribute_problem",
    "shard_key",
    "stale_consolidated",
    "suite_shards",
    "suite_status",
    "validate_store",
]

Status = Literal["complete", "incomplete", "corrupt"]


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    """Outcome of a validation: ``status``, one line per problem, per-suite statuses, and notes
    (facts that change no status, e.g. a suite checked the old way)."""

    status: Status
    problems: tuple[str, ...] = ()
    suites: dict[str, Status] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: per sharded suite: each shard's progress (see :mod:`emb.store.shards`)
    shards: dict[str, tuple[ShardProgress, ...]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    @property
    def exit_code(self) -> int:
        """0 complete, 1 incomplete (re-run the extract), 2 corrupt."""
        return {"complete": 0, "incomplete": 1}.get(self.status, 2)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "problems": list(self.problems),
            "suites": dict(self.suites),
            "notes": list(self.notes),
            "shards": {k: [s.to_dict() for s in v] for k, v in self.shards.items()},
        }


def validate_store(
    location: str | os.PathLike[str],
    *,
    deep: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> ValidationReport:
    """Validate the store at ``location`` (directory, ``.zip`` or URL), damaged or not.

    Unlike :func:`emb.open_store`, a store whose root metadata is missing or garbled is reported
    (``corrupt``), not refused.

    Raises
    ------
    StoreError
        Only when there is nothing to validate: the path does not exist, or is not a readable
        zip file; nothing is stored under the URL, or its bucket does not exist.
    RemoteStoreError
        The server of a URL cannot be reached, does not answer in time, or refuses the
        credentials (``emb validate`` exits 2 for all of these: not validated).
    """
    text = os.fspath(location)
    if not is_url(text) and local_path(text).is_dir() and not any(local_path(text).iterdir()):
        return ValidationReport(
            status="incomplete",
            problems=(f"{text} is an empty directory: nothing extracted yet; run 'emb extract'",),
        )
    zstore = open_zarr_store(text, mode="r", storage_options=storage_options)
    return validate_zarr(zstore, text, deep=deep)


def validate_zarr(zstore: Any, location: str, *, deep: bool) -> ValidationReport:
    """:func:`validate_store` on an opened zarr store: its root (:func:`_root_refusal`), each
    group (:func:`_group_status`), then the consolidated copy of their metadata."""
    names = [n for n in child_names(zstore, "") if is_group_name(n)]
    try:
        root = read_json(zstore, "zarr.json")
    except BadMetadata as err:
        return ValidationReport(
            status="corrupt",
            problems=(f"the store's root metadata is damaged: {err}; restore it from a copy, or "
                      "re-extract into a new store",),
        )
    suite_like = [n for n in names if looks_like_suite(zstore, n)]
    if (refused := _root_refusal(root, location, names, suite_like)) is not None:
        return refused
    problems: list[str] = []
    notes: list[str] = []
    statuses: dict[str, Status] = {}
    shards: dict[str, tuple[ShardProgress, ...]] = {}
    if (found := root_attribute_problem(root.get("attributes") or {})) is not None:
        problems.append(found)
    for name in names:
        status = _group_status(zstore, name, suite_like, problems, notes, deep=deep)
        if status is None:  # a node emb did not write: noted, ignored
            continue
        statuses[name] = status
        if status == "incomplete" and (progress := suite_shards(zstore, name)):
            shards[name] = progress
    if not statuses:
        return ValidationReport(
            status="incomplete",
            problems=(*problems, "no suite written yet: run 'emb extract' into this store"),
            notes=tuple(notes),
        )
    complete = [n for n, st in statuses.items() if st == "complete"]
    stale = consolidated_problems(zstore, root, complete=complete, names=names)
    if stale:
        problems.append(
            f"the consolidated metadata in the root zarr.json (a copy of every node's metadata "
            f"that plain xarray's open_zarr reads; emb reads each node's own) disagrees with "
            f"the store: {describe_problems(stale, limit=4)}; the suites' data is not affected; "
            "re-run the 'emb extract' command of any complete suite of the store (on a complete "
            "suite it only refreshes that copy)"
        )
    if "corrupt" in statuses.values() or found is not None:
        overall: Status = "corrupt"
    elif "incomplete" in statuses.values() or stale:
        overall = "incomplete"
    else:
        overall = "complete"
    return ValidationReport(
        status=overall, problems=tuple(problems), suites=statuses, notes=tuple(notes),
        shards=shards,
    )


def _root_refusal(root: dict[str, Any] | None, location: str, names: list[str],
                  suite_like: list[str]) -> ValidationReport | None:
    """The report of a store whose root (``root``: its parsed ``zarr.json``) is no readable emb
    store's: missing, not a zarr v3 group's, without emb's schema version or with one this emb
    does not read; None when it is one."""
    if root is None:
        return _no_root(location, names, suite_like)
    attrs = root.get("attributes") or {}
    if not is_group_doc(root):
        if suite_like:
            return ValidationReport(
                status="corrupt",
                problems=(f"the store's root metadata (zarr.json) is not a zarr v3 group's (it "
                          f"holds {_described(root)}), while suite data is still there "
                          f"({', '.join(suite_like)}); restore it from a copy, or re-extract "
                          "into a new store",),
            )
        return ValidationReport(
            status="corrupt",
            problems=(f"{location} is not an emb store: its root is not a zarr v3 group",),
        )
    version = attrs.get(dm.ATTR_SCHEMA_VERSION) if isinstance(attrs, dict) else None
    if version is None:
        return _unversioned(location, attrs, names, suite_like)
    if version not in dm.READABLE_SCHEMA_VERSIONS:
        return ValidationReport(
            status="corrupt",
            problems=(f"store schema version {version!r} is not one this emb reads "
                      f"({list(dm.READABLE_SCHEMA_VERSIONS)}); {dm.schema_version_advice(version)}",),
        )
    return None


def _no_root(location: str, names: list[str], suite_like: list[str]) -> ValidationReport:
    """The report of a store without a root ``zarr.json`` (:class:`StoreError` for a URL with
    nothing under it)."""
    if suite_like:
        return ValidationReport(
            status="corrupt",
            problems=(f"the store's root metadata (zarr.json) is missing, while suite data "
                      f"is still there ({', '.join(suite_like)}); restore it from a copy, or "
                      "re-extract into a new store",),
        )
    if names:
        return ValidationReport(
            status="corrupt",
            problems=(f"{location} is not an emb store: no zarr.json at its root (found "
                      f"{', '.join(names[:10])})",),
        )
    if is_url(location):  # no object under the URL: as a path that does not exist
        raise StoreError(
            f"no store at {location}: nothing is stored under that URL (no zarr.json, no "
            "objects); check the URL"
        )
    return ValidationReport(
        status="incomplete",
        problems=("nothing extracted yet: run 'emb extract' into this store",),
    )


def _unversioned(location: str, attrs: Any, names: list[str],
                 suite_like: list[str]) -> ValidationReport:
    """The report of a store whose root group has no emb schema version."""
    if suite_like:
        return ValidationReport(
            status="corrupt",
            problems=(f"the store's root metadata lost its emb attributes, while suite data "
                      f"is still there ({', '.join(suite_like)}); restore it from a copy",),
        )
    if attrs or names:
        return ValidationReport(
            status="corrupt",
            problems=(f"{location} is a zarr store but not an emb store (no "
                      f"'{dm.ATTR_SCHEMA_VERSION}' attribute)",),
        )
    return ValidationReport(
        status="incomplete",
        problems=("nothing extracted yet: run 'emb extract' into this store",),
    )


def _group_status(zstore: Any, name: str, suite_like: list[str], problems: list[str],
                  notes: list[str], *, deep: bool) -> Status | None:
    """The status of the store's group ``name`` (what is wrong appended to ``problems``, what
    was ignored to ``notes``); None for a node that is no suite emb wrote."""
    try:
        meta = read_json(zstore, f"{name}/zarr.json")
    except BadMetadata as err:
        problems.append(f"{name}: the suite's metadata is damaged: {err}; re-extract it with "
                        "--overwrite")
        return "corrupt"
    if meta is None:
        if name in suite_like:
            problems.append(
                f"{name}: the suite's metadata ({name}/zarr.json) is missing, so the suite is "
                f"invisible though its data is there; re-extract it with --name {name} "
                "--overwrite"
            )
            return "corrupt"
        notes.append(f"{name}: not part of the store (no zarr metadata); ignored")
        return None
    if not is_group_doc(meta) and meta.get("node_type") != "array":
        if name in suite_like:
            problems.append(
                f"{name}: the suite's metadata ({name}/zarr.json) is not a zarr v3 group's (it "
                f"holds {_described(meta)}), though the suite's data is there; restore it "
                f"from a copy, or re-extract it with --name {name} --overwrite"
            )
            return "corrupt"
        notes.append(f"{name}: not part of the store (its zarr.json is not zarr "
                     "metadata); ignored")
        return None
    group_attrs = meta.get("attributes") or {}
    if not isinstance(group_attrs, dict):
        problems.append(f"{name}: the suite's attributes hold {_described(group_attrs)}, not "
                        f"an object; restore {name}/zarr.json from a copy")
        return "corrupt"
    if meta.get("node_type") == "group" and dm.ATTR_SUITE not in group_attrs and (
        name in suite_like or _EMB_GROUP_ATTRS & set(group_attrs)
    ):
        problems.append(f"{name}: the suite's metadata ({name}/zarr.json) lost its "
                        f"'{dm.ATTR_SUITE}' attribute, though the suite is there; restore "
                        f"it from a copy, or re-extract the suite with --name {name} --overwrite")
        return "corrupt"
    if meta.get("node_type") != "group" or dm.ATTR_SUITE not in group_attrs:
        notes.append(f"{name}: a zarr node emb did not write; ignored")
        return None
    return _validate_suite(zstore, name, group_attrs, problems, notes, deep=deep)


def consolidated_problems(
    zstore: Any, root: dict[str, Any], *, complete: Sequence[str], names: Sequence[str]
) -> list[str]:
    """Where the root's consolidated metadata (``root``: the parsed root ``zarr.json``) disagrees
    with the nodes of the ``complete`` suites, or lists a suite group that is gone (``names``:
    the groups there); empty when it agrees, or when there is none (plain xarray then reads
    each node itself).  Suites being written are not compared: their metadata changes until
    they complete, and the writer refreshes the copy when they do."""
    copy = root.get("consolidated_metadata")
    if copy is None:
        return []
    metadata = copy.get("metadata") if isinstance(copy, dict) else None
    if not isinstance(metadata, dict):
        return [f"it is not zarr consolidated metadata (it holds {_described(copy)})"]
    found: list[str] = []
    listed = {str(k): v for k, v in metadata.items()}
    for key in sorted(listed):
        top = key.split("/", 1)[0]
        if top not in names:
            found.append(f"it lists {key}, which is not in the store")
    for name in complete:
        own = [k for k in listed if k == name or k.startswith(f"{name}/")]
        if name not in listed:
            found.append(f"suite {name!r} is not in it")
            continue
        for key in sorted(own):
            try:
                actual = read_json(zstore, f"{key}/zarr.json")
            except BadMetadata:
                actual = None
            if actual is None:
                found.append(f"it lists {key}, which is not in the store")
            elif _node_doc(actual) != _node_doc(listed[key]):
                found.append(f"its copy of {key}/zarr.json differs from the file")
    return found


def stale_consolidated(zstore: Any) -> list[str]:
    """:func:`consolidated_problems` of a store, comparing the suites whose metadata says they
    are complete (what a writer checks before it refreshes the copy)."""
    try:
        root = read_json(zstore, "zarr.json")
    except BadMetadata:
        return []
    if root is None:
        return []
    names = [n for n in child_names(zstore, "") if is_group_name(n)]
    complete = []
    for name in names:
        try:
            meta = read_json(zstore, f"{name}/zarr.json")
        except BadMetadata:
            continue
        attrs = (meta or {}).get("attributes")
        if isinstance(attrs, dict) and attrs.get(dm.ATTR_COMPLETE) is True:
            complete.append(name)
    return consolidated_problems(zstore, root, complete=complete, names=names)


def _node_doc(doc: Any) -> Any:
    """A node's metadata as consolidated metadata holds it (a group's own copy set aside)."""
    if not isinstance(doc, dict):
        return doc
    return {k: v for k, v in doc.items() if k != "consolidated_metadata"}


def is_group_doc(meta: Any) -> bool:
    """Whether a parsed ``zarr.json`` is zarr v3 group metadata."""
    return isinstance(meta, dict) and meta.get("zarr_format") == 3 and meta.get("node_type") == "group"


#: attributes emb writes on every suite group besides ``suite``
_EMB_GROUP_ATTRS = {dm.ATTR_EXTRACTION, dm.ATTR_SKELETON, dm.ATTR_COMPLETE}


def looks_like_suite(zstore: Any, name: str) -> bool:
    """Whether ``name`` holds an emb suite's pieces (even with its own metadata gone)."""
    try:
        meta = read_json(zstore, f"{name}/zarr.json")
    except BadMetadata:
        return True
    attrs = (meta or {}).get("attributes") or {}
    if meta is not None and (not isinstance(attrs, dict) or dm.ATTR_SUITE in attrs):
        return True
    children = set(child_names(zstore, name))
    return dm.PROGRESS_GROUP in children or dm.EMBEDDING in children


def _described(value: Any) -> str:
    """A stored attribute value in a message: its JSON type and the start of its repr."""
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
    text = repr(value)
    return f"{kind} ({text[:60]}{'…' if len(text) > 60 else ''})"


def root_attribute_problem(attrs: dict[str, Any]) -> str | None:
    """Why the root's emb attributes cannot be read (None: they can): ``model`` must be an
    object, and the provenance fields emb reads and shows of their type."""
    model = attrs.get(dm.ATTR_MODEL)
    fix = "restore the root zarr.json from a copy"
    if dm.ATTR_MODEL in attrs and not isinstance(model, dict):
        return (f"the store's root attribute '{dm.ATTR_MODEL}' holds {_described(model)}, not "
                f"the model's provenance (an object); {fix}")
    if found := _field_problems(model or {}, _MODEL_FIELDS):
        field_name, held, wanted = found[0]
        return (f"the store's root attribute '{dm.ATTR_MODEL}.{field_name}' holds {held}, not "
                f"{wanted}; {fix}")
    return None


#: the model's provenance fields that emb reads, shows or compares (``ModelInfo``), and their
#: types: a store edited by hand said "x layers + embeddings" or named its model "[1, 2]"
_MODEL_FIELDS: dict[str, Any] = {
    "model_id": str, "source": str, "revision": (str, None), "fingerprint": (str, None),
    "architecture": (str, None), "model_type": (str, None), "n_layers": "count",
    "hidden_size": int, "is_encoder_decoder": bool, "causal": bool,
}

#: the attributes of a suite group that must hold JSON objects, and their typed fields
_GROUP_MAPPINGS = {
    dm.ATTR_SUITE: {"settings": list, "stimulus_sets": list, "content_hash": str},
    dm.ATTR_EXTRACTION: {"poolings": list, "block_size": int},
    dm.ATTR_MODEL: _MODEL_FIELDS,
}


def _field_problems(value: dict[str, Any], fields: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, what it holds, what it should hold) of each field of ``value`` not of its kind in
    ``fields`` (a field left out is not a problem)."""
    return [(name, _described(value[name]), wanted) for name, kind in fields.items()
            if name in value and (wanted := _wrong_type(value[name], kind))]


def _wrong_type(value: Any, kind: Any) -> str | None:
    """What ``value`` should have been (None: it is of ``kind``): ``int`` a positive whole
    number, ``"count"`` a whole number ≥ 0, ``(str, None)`` a string or null."""
    if kind is int or kind == "count":
        least = 1 if kind is int else 0
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= least
        return None if ok else ("a positive whole number" if least else "a whole number ≥ 0")
    if kind == (str, None):
        return None if value is None or isinstance(value, str) else "a string or null"
    if kind is bool:
        return None if isinstance(value, bool) else "true or false"
    return None if isinstance(value, kind) else ("a list" if kind is list else "a string")


def _attribute_problems(name: str, attrs: dict[str, Any]) -> list[str]:
    """Why a suite group's attributes cannot be read (empty: they can): ``suite``,
    ``extraction`` and ``model`` must be objects, and the fields readers use of the right type."""
    fix = f"restore {name}/zarr.json from a copy"
    problems = []
    for key, fields in _GROUP_MAPPINGS.items():
        if key not in attrs:
            continue
        value = attrs[key]
        if not isinstance(value, dict):
            problems.append(f"{name}: its '{key}' attribute holds {_described(value)}, not an "
                            f"object ({fix})")
            continue
        problems += [f"{name}: its '{key}.{field_name}' attribute holds {held}, not {wanted} ({fix})"
                     for field_name, held, wanted in _field_problems(value, fields)]
    return problems


def shard_key(name: str, array: zarr.Array, block: int) -> str:
    """The store key of block ``block``'s shard of suite ``name``'s embedding."""
    return f"{name}/{dm.EMBEDDING}/" + chunk_key(array, (block, 0, 0, 0))


def read_done(done: Any) -> np.ndarray:
    """Block markers (``DONE``); a marker that cannot be decoded counts as not done (read by
    :func:`~emb.store.shards.read_markers`: a local store's one-byte files directly)."""
    return read_markers(done) == DONE


def _required_arrays(attrs: dict[str, Any]) -> tuple[str, ...]:
    """The arrays a suite group must hold: the embedding, its done-markers, and every coordinate
    of the group (:func:`emb.store._compat.coordinate_names`)."""
    return (dm.EMBEDDING, *coordinate_names(attrs), f"{dm.PROGRESS_GROUP}/done")


def _open_arrays(
    zstore: Any, name: str, keys: tuple[str, ...], problems: list[str]
) -> dict[str, zarr.Array] | None:
    """The suite's arrays, or None after appending why one cannot be opened (the first problem
    in the order of ``keys``).

    Their metadata documents are read all at once, and the arrays opened from the documents
    read, all at once (as ``zarr.open_array`` opens each from the same document, read again):
    two round trips to zarr's event loop instead of one per array and document."""
    metas = read_jsons(zstore, [f"{name}/{key}/zarr.json" for key in keys])
    fit = {key: meta for key, meta in zip(keys, metas, strict=True)
           if isinstance(meta, dict) and meta.get("zarr_format") == 3
           and meta.get("node_type") == "array"}
    opened = dict(zip(fit, arrays_from_metadata(zstore, {f"{name}/{key}": m for key, m in fit.items()}),
                      strict=True))
    arrays = {}
    for key, meta in zip(keys, metas, strict=True):
        if isinstance(meta, BadMetadata):
            problems.append(f"{name}: the metadata of '{key}' is damaged: {meta}")
            return None
        if meta is None:
            problems.append(f"{name}: the array '{key}' is missing ({name}/{key}/zarr.json)")
            return None
        if key not in fit:
            problems.append(f"{name}: the metadata of '{key}' ({name}/{key}/zarr.json) is not a "
                            f"zarr v3 array's (it holds {_described(meta)}); restore it from a "
                            f"copy, or re-extract the suite with --name {name} --overwrite")
            return None
        array = opened[key]
        if isinstance(array, RemoteStoreError):  # the server, not the metadata
            raise array
        if isinstance(array, BaseException):  # any invalid metadata: report it, never a traceback
            problems.append(f"{name}: the array '{key}' cannot be opened: {type(array).__name__}: {array}")
            return None
        empty = [list(shape) for shape in (array.shards, array.chunks)
                 if shape is not None and any(int(n) < 1 for n in shape)]
        if empty:  # zarr opens it, and divides by it when indexing
            problems.append(f"{name}: the array '{key}' has an empty chunk shape {empty[0]} "
                            f"({name}/{key}/zarr.json is damaged); restore it from a copy, or "
                            f"re-extract the suite with --name {name} --overwrite")
            return None
        arrays[key] = array
    return arrays


def _validate_suite(
    zstore: Any,
    name: str,
    attrs: dict[str, Any],
    problems: list[str],
    notes: list[str],
    *,
    deep: bool,
) -> Status:
    """The status of suite ``name`` (its group's attributes ``attrs``): its attributes, its
    arrays' item counts, its written blocks against its manifest (or, before one, the shards
    present), with ``deep`` each block decoded, and how far it got; what is wrong appended to
    ``problems``."""
    if (status := _header_status(name, attrs, problems)) is not None:
        return status
    arrays = _open_arrays(zstore, name, _required_arrays(attrs), problems)
    if arrays is None:
        return "corrupt"
    emb_arr = arrays[dm.EMBEDDING]
    n_items = emb_arr.shape[0]
    for coord in (c for c in arrays if c not in (dm.EMBEDDING, f"{dm.PROGRESS_GROUP}/done")):
        dims = dimension_names(arrays[coord])
        if dims[:1] == ("item",) and arrays[coord].shape[0] != n_items:
            problems.append(f"{name}: '{coord}' has {arrays[coord].shape[0]} items, embedding has {n_items}")
            return "corrupt"
    raw = read_markers(arrays[f"{dm.PROGRESS_GROUP}/done"])  # read once: done and per shard
    markers = raw == DONE  # as read_done reads them (a marker that cannot be decoded: not done)
    done, total = int(markers.sum()), int(markers.size)
    complete = bool(attrs.get(dm.ATTR_COMPLETE, False))
    if complete and done != total:
        problems.append(f"{name}: marked complete but only {done} of {total} blocks are written")
        return "corrupt"
    block = int((attrs.get(dm.ATTR_EXTRACTION) or {}).get("block_size", emb_arr.chunks[0]))
    found = _written_problems(zstore, name, attrs, arrays, markers, block=block,
                              complete=complete, notes=notes, deep=deep)
    if not found and deep:
        found = _decode_problems(name, emb_arr, markers, block)
    if found:
        problems.extend(found)
        return "corrupt"
    if not complete:
        shards = suite_shards(zstore, name, markers=raw)
        per_shard = (
            "; " + ", ".join(describe_shards(shards, done=False))
            + "; re-run the unfinished shards ('emb extract … --shard I/N')"
            if shards else "; re-run the same 'emb extract'"
        )
        problems.append(f"{name}: incomplete, {done} of {total} blocks written{per_shard}")
        return "incomplete"
    return "complete"


def _header_status(name: str, attrs: dict[str, Any], problems: list[str]) -> Status | None:
    """The status of a suite whose attributes already tell (a schema version this emb does not
    read, attributes of the wrong kind, a layout write interrupted); None when they do not."""
    version = attrs.get(dm.ATTR_SCHEMA_VERSION)
    if version not in dm.READABLE_SCHEMA_VERSIONS:
        problems.append(f"{name}: written with store schema version {version!r}, which this emb "
                        f"does not read ({list(dm.READABLE_SCHEMA_VERSIONS)}); "
                        f"{dm.schema_version_advice(version)}")
        return "corrupt"
    if found := _attribute_problems(name, attrs):
        problems.extend(found)
        return "corrupt"
    if not attrs.get(dm.ATTR_SKELETON, False):
        problems.append(f"{name}: layout write was interrupted (re-run the same command)")
        return "incomplete"
    return None


def _written_problems(zstore: Any, name: str, attrs: dict[str, Any], arrays: dict[str, Any],
                      markers: np.ndarray, *, block: int, complete: bool, notes: list[str],
                      deep: bool) -> list[str]:
    """What is wrong with the blocks suite ``name`` marked written (``markers``): checked against
    its manifest when it has one and they are all written, else each one's shard present (a
    suite completed before store schema 2 noted so)."""
    try:
        manifest = _manifest(zstore, name, complete=complete, attrs=attrs)
    except BadMetadata as err:
        return [f"{name}: {err}; restore {name}/{dm.PROGRESS_GROUP}/zarr.json from a "
                f"copy, or re-extract the suite with --name {name} --overwrite"]
    emb_arr = arrays[dm.EMBEDDING]
    # a manifest also vouches for a suite whose 'complete' flag was not written (or was reset)
    if manifest is not None and (complete or bool(markers.all())):
        n_items = emb_arr.shape[0]
        n_blocks = -(-int(n_items) // block)  # as the writer cuts them (none for no items)
        expected = [f"{key}/zarr.json" for key in arrays if not key.startswith(dm.PROGRESS_GROUP)]
        expected += [shard_key(name, emb_arr, b).removeprefix(f"{name}/") for b in range(n_blocks)]
        layout = {"n_items": int(n_items), "n_blocks": n_blocks, "block_size": block}
        return check_manifest(zstore, name, manifest, deep=deep, expected=expected, layout=layout)
    found = missing_shards(zstore, name, emb_arr, np.flatnonzero(markers), block)
    if not found and complete:
        notes.append(
            f"{name}: completed without a manifest (written by an emb before store schema 2): "
            "checked the old way (layout, done-markers, each shard present)"
            + ("; every block decoded" if deep else "; --deep also decodes every block")
        )
    return found


def _decode_problems(name: str, emb_arr: Any, markers: np.ndarray, block: int) -> list[str]:
    """The first block marked written that cannot be decoded or holds non-finite values (``emb
    validate --deep``)."""
    for b in np.flatnonzero(markers):
        try:
            values = np.asarray(emb_arr[b * block : (b + 1) * block])
        except RemoteStoreError:  # the server, not the block
            raise
        except Exception as err:  # noqa: BLE001 - report any decode failure
            return [f"{name}: block {b} cannot be decoded: {type(err).__name__}: {err}"]
        if not np.isfinite(values).all():
            return [f"{name}: block {b} holds non-finite values"]
    return []


def suite_shards(
    zstore: Any, name: str, done: Any = None, *, markers: np.ndarray | None = None
) -> tuple[ShardProgress, ...]:
    """Each shard's progress for a suite extracted with ``--shard`` (empty otherwise), from its
    ``done`` array, or from its raw ``markers`` (:func:`~emb.store.shards.read_markers`) read
    already."""
    record = read_record(zstore, name)
    if record is None:
        return ()
    if markers is not None:
        return tuple(shard_progress(record, markers))
    if done is None:
        try:
            done = zarr.open_array(zstore, path=f"{name}/{dm.PROGRESS_GROUP}/done", mode="r")
        except RemoteStoreError:
            raise
        except Exception:  # noqa: BLE001 - a damaged suite: validation says why
            return ()
    return tuple(shard_progress(record, read_markers(done)))


def _manifest(
    zstore: Any, name: str, *, complete: bool, attrs: dict[str, Any]
) -> dict[str, Any] | None:
    """The suite's manifest; None where it has none (an unfinished suite, or a suite of a schema
    written without one: :func:`emb.store._compat.manifest_written`).

    Raises
    ------
    BadMetadata
        The ``_progress`` group's metadata is damaged, is not a group's, or holds no manifest
        (or a garbled one) though the suite is marked complete and was written with one.
    """
    key = f"{name}/{dm.PROGRESS_GROUP}/zarr.json"
    meta = read_json(zstore, key)
    if meta is not None and not is_group_doc(meta):
        raise BadMetadata(f"its bookkeeping group's metadata ({key}) is not a zarr v3 group's "
                          f"(it holds {_described(meta)})")
    progress = (meta or {}).get("attributes") or {}
    if not isinstance(progress, dict):
        raise BadMetadata(f"its bookkeeping group's attributes ({key}) hold {_described(progress)}, "
                          "not an object")
    manifest = progress.get(dm.ATTR_MANIFEST)
    if manifest is not None and not isinstance(manifest, dict):
        raise BadMetadata(f"its manifest ({key}) holds {_described(manifest)}, not an object")
    if manifest is None and complete and manifest_written(attrs):
        where = "is missing" if meta is None else "has no 'manifest' attribute"
        raise BadMetadata(f"it is marked complete, but {key} {where}: the manifest that lists "
                          "what the suite holds is gone, so the suite cannot be checked")
    return manifest


def missing_shards(
    zstore: Any, name: str, array: zarr.Array, blocks: Any, block: int
) -> list[str]:
    """Problems for marked blocks whose shard is missing or empty (one size query per block)."""
    keys = {shard_key(name, array, int(b)): int(b) for b in blocks}
    sizes = object_sizes(zstore, list(keys))
    n = int(array.shape[0])
    return [
        f"{name}: the embedding shard of block {b} (items {b * block}–"
        f"{min(n, (b + 1) * block) - 1}, {key}) is "
        f"{'missing' if sizes[key] is None else 'empty'}, though its done-marker is set"
        for key, b in keys.items()
        if not sizes[key]
    ]


def suite_status(zstore: Any, name: str, *, deep: bool = False) -> tuple[Status, list[str], list[str]]:
    """(status, problems, notes) of one suite group, as :func:`validate_store` finds them; a
    plain check is cheap enough for every reader (metadata, markers, object sizes)."""
    problems: list[str] = []
    notes: list[str] = []
    try:
        meta = read_json(zstore, f"{name}/zarr.json")
    except BadMetadata as err:
        return "corrupt", [f"{name}: the suite's metadata is damaged: {err}"], notes
    if meta is None:
        return "corrupt", [f"{name}: the suite's metadata ({name}/zarr.json) is missing"], notes
    attrs = meta.get("attributes") or {}
    if not isinstance(attrs, dict):
        return "corrupt", [f"{name}: the suite's attributes hold {_described(attrs)}, not an "
                           "object"], notes
    status = _validate_suite(zstore, name, attrs, problems, notes, deep=deep)
    return status, problems, notes


def describe_problems(problems: list[str] | tuple[str, ...], limit: int = 3) -> str:
    """The first ``limit`` problems on one line."""
    shown = "; ".join(problems[:limit])
    return shown + (f"; and {len(problems) - limit} more" if len(problems) > limit else "")


def store_error(location: str, name: str, problems: list[str]) -> CorruptStoreError:
    """The error a reader raises for a damaged suite."""
    described = describe_problems(problems)
    again = "" if "--overwrite" in described else ", and re-extract the suite with --overwrite"
    return CorruptStoreError(
        f"suite {name!r} in {location} is damaged: {described}; run 'emb validate {location}' "
        f"for the whole report{again}"
    )

