"""May a run write here? The store's root, its model and a suite's extraction settings checked
before anything is written: someone else's data, a damaged store, another model, or other settings
are refused (reading only), and a new store's root is created under the root lock.  What a
suite's group holds decides what writing it does (:func:`plan_group`: new, resume, rewrite or
replace; :func:`check_group`: its refusals, before any lock is taken).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import zarr

from emb.errors import CorruptStoreError, StoreError, StoreMismatchError
from emb.schemas import datamodel as dm
from emb.store._location import check_writable, is_url, local_path, open_zarr_store
from emb.store._nodes import BadMetadata, child_names, list_prefix, read_json
from emb.store.lock import WriterLock, lock_path, locked
from emb.store.names import check_group_name
from emb.store.shards import LAYOUT_WAIT_S
from emb.store.validate import describe_problems, root_attribute_problem, suite_status

__all__ = [
    "EXTRACTION_IDENTITY_KEYS",
    "LOADING_IDENTITY_KEYS",
    "MODEL_IDENTITY_KEYS",
    "ROOT_LOCK_WAIT_S",
    "check_group",
    "check_same",
    "check_store",
    "extraction_differences",
    "model_differences",
    "open_for_writing",
    "plan_group",
    "root_attrs",
]

#: Model attributes that must match to write into an existing store, when the two models' sources
#: say nothing better: local directories and gguf files are the same model when their weight
#: fingerprints are equal (whatever the path), hub models when their id and revision are.
MODEL_IDENTITY_KEYS = ("model_id", "revision", "fingerprint")
#: How the weights were loaded, part of the model's identity whatever its source: vectors of a
#: quantised model, or of one placed by a device map, are never resumed into or mixed with
#: those of the model loaded whole in its dtype (absent in stores written before them: None).
LOADING_IDENTITY_KEYS = ("quantization", "device_map")
#: A local model directory's tokenizer files' fingerprint: part of the model's identity where
#: the store and the run both record it.
TOKENIZER_KEY = "tokenizer_fingerprint"
#: Extraction settings that must match to resume a suite or reuse its vectors.
EXTRACTION_IDENTITY_KEYS = ("dtype", "storage_dtype", "poolings", "bos", "bos_token", "layers")
#: How long a writer waits for another writer's short root update (creating the store,
#: refreshing the consolidated metadata) before it refuses.
ROOT_LOCK_WAIT_S = 120.0

_LOCAL_SOURCES = ("local", "gguf")


def model_differences(stored: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """How the model of a store and the model of a run differ (empty: the same model).

    Local directories and gguf files are identified by their weight fingerprint (the same
    directory written with a trailing ``/``, or a copy, is the same model), and a directory also
    by its tokenizer files' fingerprint where both record one; hub models by id and resolved
    revision; anything else by id, revision and fingerprint.  How the weights were loaded
    (quantisation, device map) counts whatever the source.
    """
    sources = (stored.get("source"), run.get("source"))
    if all(source in _LOCAL_SOURCES for source in sources):
        keys: tuple[str, ...] = ("fingerprint",)
    elif sources == ("hub", "hub"):
        keys = ("model_id", "revision")
    else:
        keys = MODEL_IDENTITY_KEYS
    keys = (*keys, *LOADING_IDENTITY_KEYS)
    out = [
        f"{key}: store has {_plain_value(stored.get(key))!r}, this run has "
        f"{_plain_value(run.get(key))!r}"
        for key in keys
        if stored.get(key) != run.get(key)
    ]
    # a local directory's tokenizer files: compared where both record them (stores written
    # before they were recorded have none)
    stored_tok, run_tok = stored.get(TOKENIZER_KEY), run.get(TOKENIZER_KEY)
    if stored_tok is not None and run_tok is not None and stored_tok != run_tok:
        out.append(f"the tokenizer files ({TOKENIZER_KEY}): store has {str(stored_tok)[:12]}…, "
                   f"this run has {str(run_tok)[:12]}… (a tokenizer changed beside the same "
                   "weights gives other vectors)")
    return out


def _plain_value(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def root_attrs(zstore: Any, location: str) -> dict[str, Any] | None:
    """The attributes of an emb store's root; None where there is no store yet (a missing or
    empty directory, or the bare root a first run killed at once leaves behind).

    Raises
    ------
    StoreError
        Anything else: a zarr store (or a directory of files) that is not an emb store.
    CorruptStoreError
        An emb store whose root metadata is damaged or missing.
    """
    names = [n for n in child_names(zstore, "") if not n.startswith(dm.LOCK_PREFIX)]
    try:
        root = read_json(zstore, "zarr.json")
    except BadMetadata as err:
        raise CorruptStoreError(
            f"{location}: the store's root metadata is damaged ({err}); 'emb validate "
            f"{location}' reports the store; write into a new store"
        ) from err
    if root is None:
        if not names:
            return None
        if ".zgroup" in names or ".zarray" in names:
            raise StoreError(
                f"--store {location} is a zarr v2 store, not an emb store: emb does not write "
                "into someone else's data; give a new path"
            )
        raise StoreError(
            f"--store {location} is a directory holding other files ({', '.join(names[:5])}"
            f"{', …' if len(names) > 5 else ''}) and no emb store (a store whose root zarr.json "
            "was deleted looks the same: 'emb validate' says which); emb does not write into "
            "someone else's data: give a new or empty directory"
        )
    attrs = root.get("attributes") or {}
    if root.get("zarr_format") != 3 or root.get("node_type") != "group":
        raise StoreError(
            f"--store {location} is a zarr {root.get('node_type', 'node')} that is not an emb "
            "store; give a new path"
        )
    if dm.ATTR_SCHEMA_VERSION not in attrs:
        if attrs or [n for n in names if n != "zarr.json"]:
            raise StoreError(
                f"--store {location} is a zarr group emb did not write (attributes "
                f"{sorted(attrs)[:5]}, members {[n for n in names if n != 'zarr.json'][:5]}); emb "
                "does not write into someone else's data: give a new path"
            )
        return None
    version = attrs.get(dm.ATTR_SCHEMA_VERSION)
    if version not in dm.READABLE_SCHEMA_VERSIONS:
        raise StoreMismatchError(
            f"{location} has store schema version {version!r}, this emb reads and writes "
            f"{list(dm.READABLE_SCHEMA_VERSIONS)}; upgrade emb, or write into a new store"
        )
    return dict(attrs)


def _check_model(location: str, attrs: Mapping[str, Any], model: Mapping[str, Any]) -> None:
    if (problem := root_attribute_problem(dict(attrs))) is not None:
        raise CorruptStoreError(f"{location}: {problem}, or write into a new store")
    existing = attrs.get(dm.ATTR_MODEL)
    if not existing:
        return
    diffs = model_differences(existing, model)
    if diffs:
        raise StoreMismatchError(
            f"{location} holds embeddings of another model ({'; '.join(diffs)}); "
            "write this model into a new store (one store per model)"
        )


def check_store(
    location: str, *, model: Mapping[str, Any] | None = None,
    storage_options: dict[str, Any] | None = None, suites: Sequence[str] = (),
) -> None:
    """Refuse, reading only, a location emb must not write into: a file or a path under one, a
    read-only directory, a zip, someone else's zarr store or files, a damaged emb store, (with
    ``model``) a store of another model, or (with ``suites``) a suite another process is writing.
    Nothing is created or changed."""
    check_writable(location, storage_options=storage_options)
    for name in suites:
        path = lock_path(location, check_group_name(name))
        if path is not None:
            WriterLock.check_free(path, what=f"suite {name!r} of store {location}")
    if not is_url(location) and not local_path(location).exists():
        return
    try:
        zstore = open_zarr_store(location, mode="r", storage_options=storage_options)
    except StoreError:
        if is_url(location):
            return  # nothing there yet (or the backend says why when writing)
        raise
    attrs = root_attrs(zstore, location)
    if attrs is not None and model is not None:
        _check_model(location, attrs, model)


def open_for_writing(
    location: str, *, model: Mapping[str, Any], storage_options: dict[str, Any] | None = None
) -> tuple[Any, zarr.Group]:
    """Open (or create) a store for ``model``; refuse one written by another model, someone
    else's zarr store or files, and a location emb cannot write into.

    Raises
    ------
    StoreError, StoreMismatchError, CorruptStoreError, StoreLockedError
    """
    check_writable(location, storage_options=storage_options)
    zstore = open_zarr_store(location, mode="a", storage_options=storage_options)
    with locked(location, None, purpose="create or check the store root", wait_s=ROOT_LOCK_WAIT_S):
        attrs = root_attrs(zstore, location)
        if attrs is None:
            # a kill between creating the root and writing its attributes leaves a bare root,
            # which the next run adopts
            try:
                group = zarr.open_group(zstore, mode="a", zarr_format=3, use_consolidated=False)
            except zarr.errors.ContainsGroupError:
                # object storage has no root lock: another worker (a shard beside us) created
                # the root between zarr's look and its create; take the root it wrote
                group = zarr.open_group(zstore, mode="r+", zarr_format=3, use_consolidated=False)
                attrs = root_attrs(zstore, location)
        if attrs is None:
            group.update_attributes(
                {dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION, dm.ATTR_MODEL: dict(model)}
            )
        else:
            _check_model(location, attrs, model)
    root = zarr.open_group(zstore, mode="r+", zarr_format=3, use_consolidated=False)
    if dm.ATTR_MODEL not in root.attrs:
        # object storage: a shard beside us that saw no root a moment before we wrote ours
        # re-created it bare (its attributes follow; CI once caught a worker reading it in
        # between). The model is checked or ours: the same attributes are written again.
        root.update_attributes(
            {dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION, dm.ATTR_MODEL: dict(model)}
        )
    return zstore, root


def check_same(
    location: str,
    name: str,
    attrs: Mapping[str, Any],
    suite_attrs: Mapping[str, Any],
    extraction: Mapping[str, Any],
) -> None:
    old_suite = attrs.get(dm.ATTR_SUITE, {})
    if old_suite.get("content_hash") != suite_attrs.get("content_hash"):
        raise StoreMismatchError(
            f"suite {name!r} in {location} was written from another definition (content hash "
            f"{str(old_suite.get('content_hash'))[:12]}…, this run {str(suite_attrs.get('content_hash'))[:12]}…); "
            "use --name to write it as another suite, or --overwrite to replace it"
        )
    diffs = extraction_differences(attrs.get(dm.ATTR_EXTRACTION, {}), extraction)
    if diffs:
        raise StoreMismatchError(
            f"suite {name!r} in {location} was extracted with other settings ({'; '.join(diffs)}); "
            "use --name to write it as another suite, or --overwrite to replace it"
        )


def extraction_differences(stored: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """The identity settings (dtype, storage dtype, poolings, BOS policy and token, layers) on which
    two extractions differ; a key a store does not record (written before it existed) is None."""
    return [
        f"{k}: store {stored.get(k)!r} vs run {run.get(k)!r}"
        for k in EXTRACTION_IDENTITY_KEYS
        if _norm(stored.get(k)) != _norm(run.get(k))
    ]


def _norm(value: Any) -> Any:
    return list(value) if isinstance(value, (tuple, list)) else value


def _group_state(zstore: Any, name: str) -> tuple[str, dict[str, Any] | None, str]:
    """What is at group ``name``: ("absent" | "suite" | "foreign" | "damaged", attrs, why)."""
    try:
        meta = read_json(zstore, f"{name}/zarr.json")
    except BadMetadata as err:
        return "damaged", None, f"its metadata is damaged ({err})"
    if meta is None:
        # temporary files of a killed write (zarr's ``*.partial``) are nothing of a suite's
        if any(not key.endswith(".partial") for key in list_prefix(zstore, name)):
            return "damaged", None, f"its metadata ({name}/zarr.json) is missing but data is there"
        return "absent", None, ""
    attrs = meta.get("attributes") or {}
    if meta.get("node_type") != "group":
        return "foreign", None, f"it is a zarr {meta.get('node_type', 'node')}, not a suite group"
    if dm.ATTR_SUITE not in attrs:
        return "foreign", None, "it is a zarr group emb did not write"
    return "suite", dict(attrs), ""


def plan_group(
    location: str,
    zstore: Any,
    *,
    name: str,
    suite_attrs: Mapping[str, Any],
    extraction: Mapping[str, Any],
    overwrite: bool,
    scanned: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """What writing suite ``name`` must do with what is there, reading only:
    ``("new", None)``, ``("resume", attrs)`` (its layout is whole and it is the same suite with the
    same settings), ``("rewrite", attrs)`` (the same suite's layout write was interrupted), or
    ``("replace", attrs or None)`` (``overwrite``: the group, and only it, is deleted first).

    ``scanned``: the group's attributes as an earlier call of this process found them when it
    answered ``"resume"`` (:func:`check_group`); where the group's attributes are still those,
    the damage scan of the group is not repeated (see below).

    Raises
    ------
    StoreMismatchError
        Another definition or other settings, or a node emb did not write (without ``overwrite``).
    CorruptStoreError
        The group's metadata is damaged (without ``overwrite``).
    """
    state, attrs, why = _group_state(zstore, name)
    if state == "absent":
        return "new", None
    if overwrite:
        return "replace", attrs
    if state in ("damaged", "foreign"):
        error = CorruptStoreError if state == "damaged" else StoreMismatchError
        raise error(
            f"{location} already has a {name!r} that emb cannot resume: {why}; use --name to "
            f"write this suite under another name, or --overwrite to replace {name!r}"
        )
    assert attrs is not None
    version = attrs.get(dm.ATTR_SCHEMA_VERSION)
    if version not in dm.READABLE_SCHEMA_VERSIONS:
        raise StoreMismatchError(
            f"suite {name!r} in {location} has store schema version {version!r}, which this emb "
            "does not write; upgrade emb, or use --name / --overwrite"
        )
    if attrs.get(dm.ATTR_SKELETON):
        check_same(location, name, attrs, suite_attrs, extraction)
        if scanned is not None and dict(scanned) == attrs:
            # Scanned earlier by this process (its check before the lock: moments ago for the
            # first suite of a run), and the group's attributes are unchanged: the
            # same layout (its generation id is new at every layout write, so a group replaced or
            # rewritten since reads differently), not finished since (that sets 'complete').  What
            # other writers may have done meanwhile is add blocks of this layout, each in the
            # crash-safe order (shard, digest, then marker; a killed writer leaves an unmarked
            # block), which the scan accepts; it cannot find damage emb made, and damage made
            # outside emb may come a moment after any scan.  Scanning again cost a shard worker
            # ~25 ms (20,000 items) for nothing.
            return "resume", attrs
        status, problems, _ = suite_status(zstore, name)
        if status == "corrupt":  # resuming would keep (or declare complete) the damage
            raise CorruptStoreError(
                f"suite {name!r} in {location} is damaged ({describe_problems(problems)}); "
                "re-extract it with --overwrite ('emb validate' gives the whole report)"
            )
        return "resume", attrs
    # a run's layout write was interrupted: rewritten when it was this very suite
    check_same(location, name, attrs, suite_attrs, extraction)
    return "rewrite", attrs


def check_group(
    location: str,
    zstore: Any,
    *,
    name: str,
    suite_attrs: Mapping[str, Any],
    extraction: Mapping[str, Any],
    overwrite: bool,
    shard: str | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """:func:`plan_group`'s refusals, read before any lock is taken, so that a run refuses before
    it writes anything; what it found (:func:`plan_group`'s answer, ``("unknown", None)`` where a
    shard writer leaves the question to its layout claim).

    A group that reads as damaged may be a layout another writer is writing at this moment (its
    arrays are there, its ``zarr.json`` not yet).  On a local store it is read again once that
    writer lets go of the suite's lock: a whole-suite writer (``shard`` None) is refused at once
    while the lock is held (:class:`StoreLockedError` names the holder, instead of a misleading
    "damaged"); a shard writer waits for the other worker's layout, as its own layout guard
    would.  On object storage a shard writer leaves the question to the check it repeats under
    its layout claim.

    Raises
    ------
    StoreMismatchError, CorruptStoreError
        As :func:`plan_group`.
    StoreLockedError
        (whole-suite writer, local store) Another process holds the suite's lock.
    """

    def plan() -> tuple[str, dict[str, Any] | None]:
        return plan_group(
            location, zstore, name=name, suite_attrs=suite_attrs, extraction=extraction,
            overwrite=overwrite,
        )

    try:
        return plan()
    except CorruptStoreError:
        path = lock_path(location, name)
        if path is None:
            if shard is not None:
                return "unknown", None
            raise
        if shard is None:
            WriterLock.check_free(path, what=f"suite {name!r} of store {location}")
        else:
            with locked(location, name, purpose=f"check suite {name!r}", wait_s=LAYOUT_WAIT_S):
                pass
        return plan()
