"""An open embedding store: list suites, read lazy Datasets, report and validate.

A store is a zarr v3 hierarchy: the root holds the model's provenance; each suite is a group that
plain xarray reads (``xr.open_zarr(path, group="vast")``).  See :mod:`emb.schemas.datamodel`.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import math
import os
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
import zarr
import zarr.errors

from emb.errors import (
    CorruptStoreError,
    EmbError,
    IncompleteStoreError,
    RemoteStoreError,
    StoreError,
)
from emb.files.outputs import (
    check_space,
    claim,
    disk_full_message,
    is_disk_full,
    refuse_inside_store,
    zarr_store_around,
)
from emb.schemas import datamodel as dm
from emb.store import _compat as compat
from emb.store._backoffs import backoff_runs, describe_runs
from emb.store._location import is_url, local_path, open_zarr_store, store_size
from emb.store._nodes import (
    BadMetadata,
    child_names,
    damage_reported,
    object_sizes,
    read_json,
)
from emb.store._verify import READS_KEY, checked_variable, suite_reads, verified_store
from emb.store._zarr import chunk_key
from emb.store.names import is_group_name
from emb.store.shards import ShardProgress, describe_shards
from emb.store.validate import (
    Status,
    ValidationReport,
    describe_problems,
    is_group_doc,
    looks_like_suite,
    read_done,
    root_attribute_problem,
    store_error,
    suite_shards,
    suite_status,
    validate_zarr,
)

__all__ = ["Store", "StoreInfo", "SuiteInfo", "ValidationReport", "open_store", "suite_names"]


#: Most dask chunks along ``item`` that :meth:`Store.dataset` makes (each a whole number of shards).
MAX_ITEM_CHUNKS = 1024
#: Most decompressed bytes of a dask chunk that follows label runs (``Store.dataset(chunk_by=)``).
RUN_CHUNK_BYTES = 64 * 2**20
#: How many of a text coordinate's first values tell a label (values repeated) from contexts.
TEXT_SAMPLE = 4096


@dataclass(frozen=True, kw_only=True)
class SuiteInfo:
    """Summary of one suite group."""

    name: str
    n_items: int
    n_layers: int
    poolings: tuple[str, ...]
    n_features: int
    storage_dtype: str
    settings: tuple[str, ...]
    stimulus_sets: tuple[str, ...]
    blocks_done: int
    blocks_total: int
    complete: bool
    content_hash: str
    generator: str | None
    shards: tuple[ShardProgress, ...] = ()  # a suite extracted with --shard, while incomplete
    #: Items in the suite's written blocks, and the bytes their embedding shards take in the
    #: store (None: the backend cannot tell, e.g. HTTP).
    items_written: int = 0
    bytes_written: int | None = None
    #: The out-of-memory back-offs of the runs that wrote it (run records, oldest first: see
    #: :mod:`emb.store._backoffs`); empty when no run backed off.
    backoffs: tuple[dict[str, Any], ...] = ()

    @property
    def bytes_per_item(self) -> float | None:
        """Bytes per item of this suite's own written blocks (None: none written, or unknown)."""
        if not self.items_written or self.bytes_written is None:
            return None
        return self.bytes_written / self.items_written

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "shards": [s.to_dict() for s in self.shards],
                "bytes_per_item": self.bytes_per_item}


@dataclass(frozen=True, kw_only=True)
class StoreInfo:
    """Summary of a store: model, suites, size on disk, completeness."""

    location: str
    model: dict[str, Any]
    suites: tuple[SuiteInfo, ...]
    size_bytes: int | None
    schema_version: int | None
    status: Status = "incomplete"
    problems: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every suite finished and intact, and at least one suite written."""
        return self.status == "complete" and bool(self.suites)

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "model": self.model,
            "suites": [s.to_dict() for s in self.suites],
            "size_bytes": self.size_bytes,
            "schema_version": self.schema_version,
            "status": self.status,
            "problems": list(self.problems),
            "complete": self.complete,
        }


class Store:
    """An open, read-only embedding store.  Use :func:`open_store` to make one."""

    def __init__(self, location: str, zstore: Any, root: zarr.Group) -> None:
        self.location = location
        self.zstore = zstore
        self.root = root

    def __repr__(self) -> str:
        model = self.root.attrs.get(dm.ATTR_MODEL)
        model_id = model.get("model_id") if isinstance(model, dict) else None
        return f"<emb.Store {self.location!r} model={model_id!r} suites={list(self.suites)}>"

    # -- contents -------------------------------------------------------------------------------
    @property
    def model(self) -> dict[str, Any]:
        """Provenance of the model that wrote this store (empty for a store with no suite yet).

        Raises
        ------
        CorruptStoreError
            The root's ``model`` attribute is not an object.
        """
        if (problem := root_attribute_problem(dict(self.root.attrs))) is not None:
            raise CorruptStoreError(f"{self.location}: {problem}")
        return dict(self.root.attrs.get(dm.ATTR_MODEL, {}))

    @property
    def suites(self) -> tuple[str, ...]:
        """Names of the suite groups whose metadata can be read, sorted (see :meth:`validate`
        for the others)."""
        return tuple(suite_names(self.zstore))

    def _group(self, name: str) -> zarr.Group:
        name = str(name) if isinstance(name, str) else name  # np.str_ reprs stay out of messages
        if name not in self.suites:
            if (damaged := self.damaged(name)) is not None:
                raise damaged
            raise StoreError(
                f"suite {name!r} is not in store {self.location}; it has {list(self.suites)}. "
                f"Add it with 'emb extract --suite {name} --store {self.location} ...'"
            )
        try:
            return zarr.open_group(
                self.zstore, path=name, mode="r", zarr_format=3, use_consolidated=False
            )
        except RemoteStoreError:  # the server, not the metadata
            raise
        except Exception as err:  # noqa: BLE001 - damaged metadata: a clear error, no traceback
            raise store_error(self.location, name, [f"{type(err).__name__}: {err}"]) from err

    def dataset(
        self,
        name: str,
        *,
        allow_incomplete: bool = False,
        chunks: Literal["layer", "shard", "inner"] = "layer",
        chunk_by: Sequence[str] = (),
        verify: bool = True,
    ) -> xr.Dataset:
        """The suite ``name`` as a lazy Dataset.

        Coordinates are loaded into memory (they are small; strings as Python ``str`` objects);
        ``embedding`` stays dask-backed with one dask chunk per block of items and ``chunks``:
        ``"layer"`` one layer × all poolings (what layer-by-layer analyses want: half the memory
        of ``"shard"`` and fewer reads than ``"inner"``), ``"shard"`` all layers and poolings,
        ``"inner"`` one layer × one pooling (the zarr inner chunk).  A later layer/pooling
        selection reads only the inner chunks it needs.

        A dask chunk holds whole shards: one (or more, to stay within ``MAX_ITEM_CHUNKS`` chunks).
        ``chunk_by`` names per-item labels (e.g. ``("lexicon", "setting", "stimulus_set")``)
        whose runs the chunks follow instead: a chunk ends wherever one of them changes and
        holds a whole run of up to ``RUN_CHUNK_BYTES`` (decompressed; longer runs are cut at
        whole shards). An analysis that reads each run whole then reads it in one zarr call,
        and no chunk is shared by two runs (a shared chunk is read whole and held until both
        are done). Labels the suite lacks are ignored; runs that would make more than
        ``MAX_ITEM_CHUNKS`` chunks keep the default chunks.

        A complete suite is first checked against its manifest (object sizes: a missing or
        truncated shard would otherwise read as NaN), and every read is verified
        (:mod:`emb.store._verify`): an inner chunk of a store-schema-3 suite by its CRC-32C, any
        other object its manifest lists by its CRC-32 when first read (for a suite written
        before schema 3 that includes its shards, read whole once; ``verify=False`` skips these
        manifest checks, never zarr's own). After computing from the Dataset, call
        :func:`emb.store.check_unchanged` (``emb analyze`` does) to refuse results read while
        the suite was rewritten.

        Raises
        ------
        StoreError
            The suite is not in the store.
        IncompleteStoreError
            The suite was not finished (unless ``allow_incomplete``).
        CorruptStoreError
            The suite is damaged (a missing shard, garbled metadata); also raised when computing
            from the Dataset reads bytes that fail their checksum, naming the object.
        """
        if chunks not in ("layer", "shard", "inner"):
            raise StoreError(f"chunks must be 'layer', 'shard' or 'inner'; got {chunks!r}")
        if isinstance(chunk_by, str) or not isinstance(chunk_by, Iterable) or not all(
            isinstance(n, str) for n in chunk_by
        ):
            raise StoreError(f"chunk_by must be a sequence of label names; got {chunk_by!r}")
        name = str(name) if isinstance(name, str) else name
        self._group(name)
        # the suite's identity first: a rewrite after this moment is found by check_unchanged
        reads = suite_reads(self.zstore, self.location, name)
        status, problems, _ = suite_status(self.zstore, name)
        if status == "corrupt":
            raise store_error(self.location, name, problems)
        if status == "incomplete" and not allow_incomplete:
            done, total = _progress(self._group(name))
            raise IncompleteStoreError(
                f"suite {name!r} in {self.location} is incomplete ({done} of {total} blocks written); "
                "re-run the same 'emb extract' command to finish it"
            )
        zstore = verified_store(reads, verify=verify)
        try:  # every later read goes through the verifying store
            group = zarr.open_group(zstore, path=name, mode="r", zarr_format=3,
                                    use_consolidated=False)
            block = int(group.attrs.get(dm.ATTR_EXTRACTION, {}).get("block_size", 1024))
            ds = xr.open_zarr(zstore, group=name, consolidated=False, zarr_format=3, chunks=None)
            array = zarr.open_array(zstore, path=f"{name}/{dm.EMBEDDING}", mode="r",
                                    zarr_format=3)
        except EmbError:
            raise
        except Exception as err:  # noqa: BLE001 - damaged metadata: a clear error, no traceback
            raise store_error(self.location, name, [f"{type(err).__name__}: {err}"]) from err
        with damage_reported([self.location]):  # a coordinate chunk that does not decode
            ds = ds.assign_coords(_coordinates(group, ds))
        runs = backoff_runs(zstore, name, group.attrs)
        if runs:  # with the records of runs not yet folded into the attribute (unfinished)
            ds.attrs[dm.ATTR_BACKOFFS] = runs
        ds[dm.EMBEDDING] = checked_variable(ds[dm.EMBEDDING].variable, array, reads, block=block)
        # whole shards per dask chunk, at most MAX_ITEM_CHUNKS of them: a paper-scale CEAT group
        # (4 million items, 128 per shard) would otherwise make 406,250 dask chunks per read
        shards = max(1, -(-ds.sizes["item"] // (block * MAX_ITEM_CHUNKS)))
        spec = {"item": -1, "layer": -1, "pooling": -1, "feature": -1}
        if chunks == "layer":
            spec["layer"] = 1
        elif chunks == "inner":
            spec |= {"layer": 1, "pooling": 1}
        spec["item"] = block * shards
        runs = _run_chunks(ds, chunk_by, spec, block) if chunk_by else None
        if runs is not None:
            spec["item"] = runs
        # lazy: wraps the zarr array in dask (the variable only: chunking the DataArray would also
        # wrap and hash every coordinate, ~1.5 µs per item)
        ds[dm.EMBEDDING] = ds[dm.EMBEDDING].variable.chunk(spec)
        ds.encoding["source"] = self.location
        ds.encoding[READS_KEY] = reads  # for check_unchanged
        return ds

    def damaged(self, name: str) -> CorruptStoreError | None:
        """The error that says why suite ``name`` is damaged (what a plain :meth:`validate`
        finds), or None when it is intact or not in the store at all: a suite whose metadata
        was deleted or lost its attributes is not among :attr:`suites`, yet it is there."""
        report = self.validate()
        if report.suites.get(name) != "corrupt":
            return None
        own = [p for p in report.problems if p.startswith(f"{name}:")]
        return store_error(self.location, name, own or list(report.problems))

    # -- reports -----------------------------------------------------------------------------------
    def info(self) -> StoreInfo:
        """Model, suites (items, layers, poolings, completeness), size on disk, and the status of
        a plain :meth:`validate` (so a missing shard shows here too)."""
        report = self.validate()
        suites = []
        for name in self.suites:
            try:
                suites.append(_suite_info(name, self._group(name)))
            except RemoteStoreError:
                raise
            except (StoreError, KeyError, ValueError, TypeError):
                continue  # damaged: the report says why
        return StoreInfo(
            location=self.location,
            model=self.model,
            suites=tuple(suites),
            size_bytes=store_size(self.location, self.zstore),
            schema_version=self.root.attrs.get(dm.ATTR_SCHEMA_VERSION),
            status=report.status,
            problems=report.problems,
        )

    def validate(self, *, deep: bool = False) -> ValidationReport:
        """Check the store: ``complete``, ``incomplete`` (re-run the extract) or ``corrupt``.

        A plain check reads metadata, done-markers and the sizes of the objects each complete
        suite's manifest lists; ``deep`` also reads every byte (checksums) and decodes every
        block (finite values).  See :mod:`emb.store.validate`.
        """
        return validate_zarr(self.zstore, self.location, deep=deep)

    def to_zip(self, path: str | os.PathLike[str]) -> Path:
        """Pack the store into one zip file (stored, not re-compressed) for sharing.

        The zip is written under a unique temporary name beside the target (claimed: a second
        ``emb zip`` to the same target is refused while this one runs; the next one to claim it
        removes what a killed one left) and linked into place only when it is complete, where
        no file may have appeared meanwhile: ``path`` never holds a partial zip, and a file
        there is never replaced.

        Raises
        ------
        StoreError
            The target exists, lies in a missing directory or inside a zarr store (this one or
            another), another ``emb zip`` is writing it, the disk has no room for it (with the
            space needed), or the store is not a local directory.
        IncompleteStoreError, CorruptStoreError
            The store is not complete and intact (see :meth:`validate`).
        """
        target = Path(path).expanduser()
        source = Path(self.location).expanduser()
        if is_url(self.location) or not source.is_dir():
            raise StoreError(f"only local directory stores can be packed; {self.location} is not one")
        if not target.parent.is_dir():
            raise StoreError(
                f"cannot write {target}: its directory {target.parent} does not exist; create it "
                "first or choose another path"
            )
        if os.path.lexists(target):
            if zarr_store_around(target) is None:  # a zip killed after it was linked into place
                with contextlib.suppress(StoreError), claim(target, what="TARGET",
                                                             error=StoreError) as held:
                    held.remove_leftovers()
            raise StoreError(f"{target} exists; remove it or choose another name")
        refuse_inside_store(target, what="the zip", error=StoreError,
                            fix="choose a path outside the store")
        if not os.access(target.parent, os.W_OK | os.X_OK):
            raise StoreError(f"cannot write {target}: {target.parent} is read-only for this user")
        fix = "choose another path (nothing was written)"
        members = []
        for file in sorted(p for p in source.rglob("*") if p.is_file()):
            rel = file.relative_to(source).as_posix()
            if rel.startswith(dm.LOCK_PREFIX) or rel.endswith(".partial"):
                continue  # a writer's lock, a temporary file of an interrupted write
            members.append((file, rel))
        # each member: its bytes, a local header and a central directory entry (both with
        # the name and a zip64 extra field); then the end records
        needed = sum(f.stat().st_size + 2 * len(r.encode()) + 140 for f, r in members) + 1024
        check_space(target.parent, needed, what="the zip", error=StoreError, fix=fix)
        with claim(target, what="TARGET", error=StoreError) as held:
            held.remove_leftovers()  # a killed zip's temporary
            if os.path.lexists(target):
                raise StoreError(f"{target} exists; remove it or choose another name")
            report = self.validate()
            if report.status != "complete":
                error = CorruptStoreError if report.status == "corrupt" else IncompleteStoreError
                raise error(
                    f"{self.location} is {report.status} ({describe_problems(report.problems)}); "
                    "finish or repair it ('emb validate') before packing"
                )
            tmp = held.temporary()
            try:
                with tmp.open("wb") as raw, zipfile.ZipFile(
                        raw, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                    for file, rel in members:
                        zf.write(file, rel)
                _link_new(tmp, target)
            except OSError as err:
                if is_disk_full(err):
                    tmp.unlink(missing_ok=True)
                    raise StoreError(disk_full_message(target.parent, needed, what="the zip",
                                                       fix=fix)) from None
                raise StoreError(f"cannot write {target}: {err.strerror or err}") from None
            finally:
                tmp.unlink(missing_ok=True)
        return target


def _link_new(tmp: Path, target: Path) -> None:
    """Give the complete file ``tmp`` the name ``target``, which must still be free: a hard link
    fails if anything took the name meanwhile (where a file system has no hard links, the name
    is checked, then the file renamed)."""
    try:
        os.link(tmp, target)
        return
    except FileExistsError:
        raise StoreError(
            f"{target} appeared while the zip was written (another program made it); it was "
            "left as it is: remove it or choose another name"
        ) from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV,
                             errno.EMLINK, errno.ENOSYS):
            raise
    if os.path.lexists(target):
        raise StoreError(f"{target} appeared while the zip was written; remove it or choose "
                         "another name")
    os.replace(tmp, target)


def open_store(
    location: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None
) -> Store:
    """Open an embedding store for reading: a directory, a ``.zip`` file or an fsspec URL.

    Raises
    ------
    StoreError
        Nothing there, a file that is not a zip, or a zarr store that is not an emb store.
    IncompleteStoreError
        An empty directory (nothing extracted yet).
    CorruptStoreError
        The root metadata is missing or damaged while suite data is there (``emb validate``
        reports it).

    Examples
    --------
    >>> store = emb.open_store("gpt2.zarr")            # doctest: +SKIP
    >>> ds = store.dataset("vast")                     # doctest: +SKIP
    >>> ds.embedding.sel(layer=8, pooling="last")      # doctest: +SKIP
    """
    text = os.fspath(location)
    local = local_path(text)
    if not is_url(text) and local.is_dir() and not any(local.iterdir()):
        raise IncompleteStoreError(
            f"{text} is an empty directory: nothing extracted yet; run 'emb extract ... --store {text}'"
        )
    zstore = open_zarr_store(text, mode="r", storage_options=storage_options)
    try:
        meta = read_json(zstore, "zarr.json")
    except BadMetadata as err:
        raise CorruptStoreError(
            f"{text}: the store's root metadata is damaged ({err}); 'emb validate {text}' reports "
            "the whole store"
        ) from err
    if meta is None:
        names = [n for n in child_names(zstore, "") if is_group_name(n)]
        if names:
            raise CorruptStoreError(
                f"{text} has no zarr.json at its root: either it is not an emb store, or its root "
                f"metadata was deleted (it holds {', '.join(names[:10])}); 'emb validate {text}' "
                "says which"
            )
        where = "check the URL, or write one there" if is_url(text) else "nothing extracted yet"
        raise IncompleteStoreError(
            f"{text} holds no store (no zarr.json there): {where}; run 'emb extract ... --store {text}'"
        )
    if not is_group_doc(meta) and any(
        looks_like_suite(zstore, n) for n in child_names(zstore, "") if is_group_name(n)
    ):
        raise CorruptStoreError(
            f"{text}: the store's root metadata (zarr.json) is not a zarr v3 group's, while suite "
            f"data is there; 'emb validate {text}' reports the whole store"
        )
    try:
        root = zarr.open_group(zstore, mode="r", zarr_format=3, use_consolidated=False)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError, KeyError, ValueError, TypeError) as err:
        raise StoreError(f"{text} is not an emb store (no zarr v3 group at its root): {err}") from err
    if dm.ATTR_SCHEMA_VERSION not in root.attrs and (dict(root.attrs) or _has_children(zstore)):
        raise StoreError(f"{text} is a zarr store but not an emb store (no '{dm.ATTR_SCHEMA_VERSION}')")
    version = root.attrs.get(dm.ATTR_SCHEMA_VERSION)
    if version is not None and version not in dm.READABLE_SCHEMA_VERSIONS:
        raise StoreError(
            f"{text} has store schema version {version!r}; this emb reads "
            f"{list(dm.READABLE_SCHEMA_VERSIONS)}: {dm.schema_version_advice(version)}"
        )
    if (problem := root_attribute_problem(dict(root.attrs))) is not None:
        raise CorruptStoreError(f"{text}: {problem}; 'emb validate {text}' reports the whole store")
    # a bare root group is what a first run killed right after creating the store leaves behind
    return Store(text, zstore, root)


def suite_names(zstore: Any) -> list[str]:
    """Names of the groups of a store that are emb suites and whose metadata reads, sorted."""
    names = []
    for name in child_names(zstore, ""):
        if not is_group_name(name):
            continue  # lock files, temporary files, anything that cannot be a group
        try:
            meta = read_json(zstore, f"{name}/zarr.json")
        except BadMetadata:
            continue
        attrs = (meta or {}).get("attributes")
        if meta and meta.get("node_type") == "group" and isinstance(attrs, dict) and dm.ATTR_SUITE in attrs:
            names.append(name)
    return names


def _has_children(zstore: Any) -> bool:
    return any(is_group_name(n) for n in child_names(zstore, ""))


# -- helpers --------------------------------------------------------------------------------------
def _run_chunks(
    ds: xr.Dataset, labels: Sequence[str], spec: dict[str, Any], block: int
) -> tuple[int, ...] | None:
    """Item chunk sizes that end wherever one of ``labels`` changes, each at most
    ``RUN_CHUNK_BYTES`` (longer runs cut at whole shards); None when no label is present, or
    when the runs would make more than ``MAX_ITEM_CHUNKS`` chunks (a label that changes that
    often makes no runs worth following: the default chunks are kept)."""
    present = [n for n in labels if n in ds.variables and ds.variables[n].dims == ("item",)]
    n = ds.sizes["item"]
    if not present or n == 0:
        return None
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for name in present:
        codes = pd.factorize(np.asarray(ds.variables[name].values).ravel())[0]  # NaN == NaN
        change[1:] |= codes[1:] != codes[:-1]
    var = ds.variables[dm.EMBEDDING]
    item_bytes = var.dtype.itemsize * math.prod(
        1 if spec[d] == 1 else var.sizes[d] for d in var.dims if d != "item"
    )
    most = block * max(1, RUN_CHUNK_BYTES // max(1, block * item_bytes))
    bounds = [*np.flatnonzero(change).tolist(), n]
    sizes: list[int] = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        while stop - start > most:
            cut = (start // block + most // block) * block  # a shard boundary
            sizes.append(cut - start)
            start = cut
        sizes.append(stop - start)
        if len(sizes) > MAX_ITEM_CHUNKS:
            return None
    return tuple(sizes)


def _coordinates(group: zarr.Group, ds: xr.Dataset) -> dict[str, xr.Variable]:
    """Every coordinate of ``ds`` in memory, as the current store schema holds it whatever the
    schema of the suite (:mod:`emb.store._compat`): text as ``str`` objects, a boolean label as
    ``bool``.

    Text is read straight from its zarr array and converted in one pass: through xarray's lazy
    decoding and its object-array conversion the same coordinates took ~10 µs per item (a
    4-million-item suite spent 40 s opening).  The values and attributes are those xarray's
    decoding gives (a test checks).
    """
    out: dict[str, xr.Variable] = {}
    names = [n for n in ds.coords if n not in ds.indexes] + list(ds.indexes)  # the order of before
    for name in names:
        coord = ds.coords[name]
        if compat.is_text(np.dtype(coord.encoding.get("dtype", "f8")), coord.encoding):
            values = _shared_text(compat.text(np.asarray(group[str(name)][...])))
            variable = xr.Variable(coord.dims, values, coord.attrs, fastpath=True)
        else:
            variable = _plain(coord).variable
        out[str(name)] = compat.label(str(name), variable)
    return out


def _plain(coord: xr.DataArray) -> xr.DataArray:
    """A coordinate loaded into memory, text turned into ``str`` objects (numpy StringDType,
    which zarr's ``string`` reads as, does not survive ``astype(str)``)."""
    values = np.asarray(coord.values)
    if values.dtype.kind in "TUS" or (values.dtype.kind == "O" and values.size
                                      and isinstance(values.flat[0], bytes)):
        values = _shared_text(compat.text(values))
    return xr.DataArray(values, dims=coord.dims, attrs=coord.attrs)


def _shared_text(values: np.ndarray) -> np.ndarray:
    """A text column whose values repeat (a label: a few hundred stimuli, tests or settings over
    millions of items) with equal values as one ``str`` object: 8 bytes an item instead of a
    string each (~60 bytes: a 4-million-item CEAT suite's seven text labels held 1.7 GB). A
    column whose first :data:`TEXT_SAMPLE` values are mostly distinct (contexts) is kept as
    it is read. The values are unchanged."""
    if values.ndim != 1 or values.dtype != object or len(values) <= TEXT_SAMPLE:
        return values
    if len(set(values[:TEXT_SAMPLE].tolist())) * 4 > TEXT_SAMPLE:
        return values
    codes, distinct = pd.factorize(values)  # hashing, in C
    if codes.size and codes.min() < 0:  # a missing value (None, NaN): kept as it is read
        return values
    return np.asarray(distinct, dtype=object).take(codes)


def _done_blocks(group: zarr.Group) -> np.ndarray | None:
    """The done-marker of each block (None: the suite has no progress record)."""
    try:
        done = group[f"{dm.PROGRESS_GROUP}/done"]
    except KeyError:
        return None
    return np.asarray(read_done(done), dtype=bool)


def _written(group: zarr.Group, emb_arr: Any, complete: bool) -> tuple[int, int | None]:
    """(items, bytes) of the suite's written blocks: the items they hold and the size of their
    embedding shards in the store, one stat per shard (bytes None when the backend cannot say).
    A block is one shard along ``item`` (:mod:`emb.store.suite_writer`)."""
    shard = tuple(int(c) for c in (emb_arr.shards or emb_arr.chunks))
    n = int(emb_arr.shape[0])
    grid = [math.ceil(s / c) for s, c in zip(emb_arr.shape, shard, strict=True)]
    done = _done_blocks(group)
    if complete:
        blocks: list[int] = list(range(grid[0]))
    else:  # no progress record yet: nothing written
        blocks = [] if done is None else np.flatnonzero(done[:grid[0]]).tolist()
    items = sum(min(shard[0], n - i * shard[0]) for i in blocks)
    if not items:
        return 0, 0
    prefix = f"{group.path}/{dm.EMBEDDING}/"
    keys = [prefix + chunk_key(emb_arr, (i, *rest)) for i in blocks
            for rest in itertools.product(*(range(g) for g in grid[1:]))]
    try:
        sizes = object_sizes(group.store, keys)
    except (OSError, NotImplementedError, StoreError):  # a backend that cannot stat: unknown
        return items, None
    if any(v is None for v in sizes.values()):  # no size from this backend (or a lost shard)
        return items, None
    return items, sum(int(v) for v in sizes.values() if v is not None)


def _progress(group: zarr.Group) -> tuple[int, int]:
    try:
        done = group[f"{dm.PROGRESS_GROUP}/done"]
    except KeyError:
        return 0, 0
    values = read_done(done)
    return int(values.sum()), int(values.size)


def _suite_info(name: str, group: zarr.Group) -> SuiteInfo:
    suite = dict(group.attrs.get(dm.ATTR_SUITE, {}))
    extraction = dict(group.attrs.get(dm.ATTR_EXTRACTION, {}))
    emb_arr = group[dm.EMBEDDING]
    done, total = _progress(group)
    complete = bool(group.attrs.get(dm.ATTR_COMPLETE, False))
    items_written, bytes_written = _written(group, emb_arr, complete)
    return SuiteInfo(
        name=name,
        n_items=int(emb_arr.shape[0]),
        n_layers=int(emb_arr.shape[1]),
        poolings=tuple(extraction.get("poolings", ())),
        n_features=int(emb_arr.shape[3]),
        storage_dtype=str(emb_arr.dtype),
        settings=tuple(suite.get("settings", ())),
        stimulus_sets=tuple(suite.get("stimulus_sets", ())),
        blocks_done=done,
        blocks_total=total,
        complete=bool(group.attrs.get(dm.ATTR_COMPLETE, False)),
        content_hash=str(suite.get("content_hash", "")),
        generator=suite.get("generator"),
        shards=() if group.attrs.get(dm.ATTR_COMPLETE) else suite_shards(group.store, name),
        items_written=items_written,
        bytes_written=bytes_written,
        backoffs=tuple(backoff_runs(group.store, name, group.attrs)),
    )


def describe(info: StoreInfo) -> str:
    """A short human-readable summary (used by ``emb info`` and ``emb extract``)."""
    model = info.model
    described = (
        f"{model.get('model_id')} ({model.get('architecture')}, {model.get('vocab_size', 0):,} "
        f"words × {model.get('hidden_size')}, sha256 {str(model.get('sha256'))[:12]}…)"
        if model.get("source") == "static"
        else f"{model.get('model_id')} (revision {model.get('revision') or '-'}, "
        f"{model.get('architecture')}, {model.get('n_layers')} layers + embeddings, "
        f"{model.get('hidden_size')}-d)"
    )
    lines = [
        f"store     {info.location}",
        f"model     {described}",
        f"last layer {model.get('last_layer', '-')}",
        f"size      {_human(info.size_bytes)}",
        f"schema    {info.schema_version if info.schema_version is not None else '-'} (store "
        f"schema version; this emb reads {', '.join(map(str, dm.READABLE_SCHEMA_VERSIONS))})",
    ]
    for s in info.suites:
        state = "complete" if s.complete else f"INCOMPLETE ({s.blocks_done}/{s.blocks_total} blocks)"
        if not s.items_written:
            per_item = "; no blocks written"
        elif s.bytes_per_item is None:
            per_item = ""
        else:  # this suite's own written blocks, not a store-wide average
            per_item = f", {_human(s.bytes_per_item)} per item"
            if not s.complete:
                per_item += f" (over the {s.items_written:,} items written)"
        lines.append(
            f"suite     {s.name}: {s.n_items} items × {s.n_layers} layers × {len(s.poolings)} poolings "
            f"({','.join(s.poolings)}) × {s.n_features} ({s.storage_dtype}); settings "
            f"{','.join(s.settings)}; {state}{per_item}"
        )
        for line in describe_shards(s.shards):
            lines.append(f"          {line}")
        for line in describe_runs(s.backoffs):
            lines.append(f"          {line}")
    if not info.suites and info.status != "corrupt":
        lines.append("suite     none yet")
    names = tuple(f"{s.name}:" for s in info.suites)
    for problem in info.problems:  # an unfinished suite is its own line above
        if info.status == "corrupt" or not problem.startswith(names):
            lines.append(f"problem   {problem}")
    status = info.status
    if status == "corrupt":
        status += f" (run 'emb validate {info.location}')"
    elif not info.suites:
        status = "incomplete (no suite written yet)"
    lines.append(f"status    {status}")
    return "\n".join(lines)


def _human(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n} B"
