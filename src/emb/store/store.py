"""An open embedding store: list suites, read lazy Datasets, report and validate.

A store is a zarr v3 hierarchy: the root holds the model's provenance; each suite is a group that
plain xarray reads (``xr.open_zarr(path, group="vast")``).  See :mod:`emb.schemas.datamodel`.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr
import zarr
import zarr.errors

from emb.errors import IncompleteStoreError, StoreError
from emb.schemas import datamodel as dm
from emb.store._location import open_zarr_store, store_size

__all__ = ["Store", "StoreInfo", "SuiteInfo", "ValidationReport", "open_store"]

Status = Literal["complete", "incomplete", "corrupt"]


#: Most dask chunks along ``item`` that :meth:`Store.dataset` makes (each a whole number of shards).
MAX_ITEM_CHUNKS = 1024


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class StoreInfo:
    """Summary of a store: model, suites, size on disk, completeness."""

    location: str
    model: dict[str, Any]
    suites: tuple[SuiteInfo, ...]
    size_bytes: int | None
    schema_version: int | None

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.suites)

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "model": self.model,
            "suites": [s.to_dict() for s in self.suites],
            "size_bytes": self.size_bytes,
            "schema_version": self.schema_version,
            "complete": self.complete,
        }


@dataclass(frozen=True, kw_only=True)
class ValidationReport:
    """Outcome of :meth:`Store.validate`: ``status`` and one line per problem found."""

    status: Status
    problems: tuple[str, ...] = ()
    suites: dict[str, Status] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "problems": list(self.problems), "suites": self.suites}


class Store:
    """An open, read-only embedding store.  Use :func:`open_store` to make one."""

    def __init__(self, location: str, zstore: Any, root: zarr.Group) -> None:
        self.location = location
        self.zstore = zstore
        self.root = root

    def __repr__(self) -> str:
        return f"<emb.Store {self.location!r} model={self.model.get('model_id')!r} suites={list(self.suites)}>"

    # -- contents -------------------------------------------------------------------------------
    @property
    def model(self) -> dict[str, Any]:
        """Provenance of the model that wrote this store (empty for a store with no suite yet)."""
        return dict(self.root.attrs.get(dm.ATTR_MODEL, {}))

    @property
    def suites(self) -> tuple[str, ...]:
        """Names of the suite groups, sorted."""
        names = []
        for name, node in self.root.members():
            if isinstance(node, zarr.Group) and dm.ATTR_SUITE in node.attrs:
                names.append(name)
        return tuple(sorted(names))

    def _group(self, name: str) -> zarr.Group:
        if name not in self.suites:
            raise StoreError(
                f"suite {name!r} is not in store {self.location}; it has {list(self.suites)}. "
                f"Add it with 'emb extract --suite {name} --store {self.location} ...'"
            )
        return self.root[name]  # type: ignore[return-value]

    def dataset(
        self,
        name: str,
        *,
        allow_incomplete: bool = False,
        chunks: Literal["layer", "shard", "inner"] = "layer",
    ) -> xr.Dataset:
        """The suite ``name`` as a lazy Dataset.

        Coordinates are loaded into memory (they are small; strings as Python ``str`` objects);
        ``embedding`` stays dask-backed with one dask chunk per block of items and ``chunks``:
        ``"layer"`` one layer × all poolings (what layer-by-layer analyses want: half the memory
        of ``"shard"`` and fewer reads than ``"inner"``), ``"shard"`` all layers and poolings,
        ``"inner"`` one layer × one pooling (the zarr inner chunk).  A later layer/pooling
        selection reads only the inner chunks it needs.

        Raises
        ------
        StoreError
            The suite is not in the store.
        IncompleteStoreError
            The suite was not finished (unless ``allow_incomplete``).
        """
        group = self._group(name)
        if not group.attrs.get(dm.ATTR_COMPLETE, False) and not allow_incomplete:
            done, total = _progress(group)
            raise IncompleteStoreError(
                f"suite {name!r} in {self.location} is incomplete ({done} of {total} blocks written); "
                "re-run the same 'emb extract' command to finish it"
            )
        if chunks not in ("layer", "shard", "inner"):
            raise StoreError(f"chunks must be 'layer', 'shard' or 'inner'; got {chunks!r}")
        block = int(group.attrs.get(dm.ATTR_EXTRACTION, {}).get("block_size", 1024))
        ds = xr.open_zarr(
            self.zstore, group=name, consolidated=False, zarr_format=3, chunks=None
        )
        ds = ds.assign_coords(
            {name: _plain(coord) for name, coord in ds.coords.items() if name not in ds.indexes}
        )
        ds = ds.assign_coords({name: _plain(ds[name]) for name in ds.indexes})
        # whole shards per dask chunk, at most MAX_ITEM_CHUNKS of them: a paper-scale CEAT group
        # (4 million items, 128 per shard) would otherwise make 406,250 dask chunks per read
        per_chunk = block * max(1, -(-ds.sizes["item"] // (block * MAX_ITEM_CHUNKS)))
        spec = {"item": per_chunk, "layer": -1, "pooling": -1, "feature": -1}
        if chunks == "layer":
            spec["layer"] = 1
        elif chunks == "inner":
            spec |= {"layer": 1, "pooling": 1}
        ds[dm.EMBEDDING] = ds[dm.EMBEDDING].chunk(spec)  # lazy: wraps the zarr array in dask
        ds.encoding["source"] = self.location
        return ds

    # -- reports -----------------------------------------------------------------------------------
    def info(self) -> StoreInfo:
        """Model, suites (items, layers, poolings, completeness) and size on disk."""
        suites = []
        for name in self.suites:
            group = self.root[name]
            suites.append(_suite_info(name, group))  # type: ignore[arg-type]
        return StoreInfo(
            location=self.location,
            model=self.model,
            suites=tuple(suites),
            size_bytes=store_size(self.location, self.zstore),
            schema_version=self.root.attrs.get(dm.ATTR_SCHEMA_VERSION),
        )

    def validate(self, *, deep: bool = False) -> ValidationReport:
        """Check the layout; ``deep`` also decodes every block and checks it is finite.

        ``complete``: every suite finished.  ``incomplete``: a run was interrupted, or none has
        written a suite yet (re-run it).  ``corrupt``: metadata or data that an interrupted run
        cannot explain.
        """
        problems: list[str] = []
        statuses: dict[str, Status] = {}
        version = self.root.attrs.get(dm.ATTR_SCHEMA_VERSION)
        if version is None:  # bare root: a first run stopped before writing anything else
            return ValidationReport(
                status="incomplete",
                problems=("nothing extracted yet: run 'emb extract' into this store",),
            )
        if version != dm.STORE_SCHEMA_VERSION:
            problems.append(
                f"schema version {version} is not {dm.STORE_SCHEMA_VERSION}; upgrade emb"
            )
        for name, node in self.root.members():
            if not isinstance(node, zarr.Group):
                continue
            if dm.ATTR_SUITE not in node.attrs:
                statuses[name] = "incomplete"
                problems.append(f"{name}: group started but its layout was not written (re-run)")
                continue
            statuses[name] = _validate_suite(name, node, problems, deep=deep)
        if not statuses:
            return ValidationReport(
                status="incomplete",
                problems=(*problems, "no suite written yet: run 'emb extract' into this store"),
                suites=statuses,
            )
        if any(s == "corrupt" for s in statuses.values()) or (problems and version != dm.STORE_SCHEMA_VERSION):
            status: Status = "corrupt"
        elif any(s == "incomplete" for s in statuses.values()):
            status = "incomplete"
        else:
            status = "complete"
        return ValidationReport(status=status, problems=tuple(problems), suites=statuses)

    def to_zip(self, path: str | os.PathLike[str]) -> Path:
        """Pack the store into one zip file (stored, not re-compressed) for sharing."""
        target = Path(path)
        if target.exists():
            raise StoreError(f"{target} exists; remove it or choose another name")
        if not self.info().complete:
            raise IncompleteStoreError(
                f"{self.location} is incomplete; finish it with 'emb extract' before packing"
            )
        source = Path(self.location)
        if not source.is_dir():
            raise StoreError(f"only local directory stores can be packed; {self.location} is not one")
        tmp = target.with_name(target.name + ".partial")
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for file in sorted(p for p in source.rglob("*") if p.is_file()):
                zf.write(file, file.relative_to(source).as_posix())
        tmp.replace(target)
        return target


def open_store(
    location: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None
) -> Store:
    """Open an embedding store for reading: a directory, a ``.zip`` file or an fsspec URL.

    Examples
    --------
    >>> store = emb.open_store("gpt2.zarr")            # doctest: +SKIP
    >>> ds = store.dataset("vast")                     # doctest: +SKIP
    >>> ds.embedding.sel(layer=8, pooling="last")      # doctest: +SKIP
    """
    text = os.fspath(location)
    local = Path(text)
    if "://" not in text and local.is_dir() and not any(local.iterdir()):
        raise IncompleteStoreError(
            f"{text} is an empty directory: nothing extracted yet; run 'emb extract ... --store {text}'"
        )
    zstore = open_zarr_store(text, mode="r", storage_options=storage_options)
    try:
        root = zarr.open_group(zstore, mode="r", zarr_format=3, use_consolidated=False)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError, KeyError, ValueError) as err:
        raise StoreError(f"{text} is not an emb store (no zarr v3 group at its root): {err}") from err
    if dm.ATTR_SCHEMA_VERSION not in root.attrs and (dict(root.attrs) or list(root.members())):
        raise StoreError(f"{text} is a zarr store but not an emb store (no '{dm.ATTR_SCHEMA_VERSION}')")
    # a bare root group is what a first run killed right after creating the store leaves behind
    return Store(text, zstore, root)


# -- helpers --------------------------------------------------------------------------------------
def _plain(coord: xr.DataArray) -> xr.DataArray:
    """A coordinate loaded into memory, numpy StringDType strings turned into ``str`` objects
    (numpy 2's StringDType does not survive ``astype(str)``, netCDF or pandas everywhere)."""
    values = np.asarray(coord.values)
    if values.dtype.kind == "T" or values.dtype.kind == "U":
        values = values.astype(object)
    return xr.DataArray(values, dims=coord.dims, attrs=coord.attrs)


def _progress(group: zarr.Group) -> tuple[int, int]:
    try:
        done = group[f"{dm.PROGRESS_GROUP}/done"]
    except KeyError:
        return 0, 0
    values = _read_done(done)
    return int(values.sum()), int(values.size)


def _read_done(done: Any) -> np.ndarray:
    """Block markers; a marker that cannot be decoded counts as not done."""
    out = np.zeros(done.shape[0], dtype=bool)
    try:
        out[:] = np.asarray(done[:]) == 1
    except Exception:  # noqa: BLE001 - a torn marker write: fall back to one block at a time
        for i in range(done.shape[0]):
            try:
                out[i] = int(done[i]) == 1
            except Exception:  # noqa: BLE001
                out[i] = False
    return out


def _suite_info(name: str, group: zarr.Group) -> SuiteInfo:
    suite = dict(group.attrs.get(dm.ATTR_SUITE, {}))
    extraction = dict(group.attrs.get(dm.ATTR_EXTRACTION, {}))
    emb_arr = group[dm.EMBEDDING]
    done, total = _progress(group)
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
    )


def _validate_suite(name: str, group: zarr.Group, problems: list[str], *, deep: bool) -> Status:
    try:
        emb_arr = group[dm.EMBEDDING]
    except KeyError:
        problems.append(f"{name}: no '{dm.EMBEDDING}' array")
        return "corrupt" if group.attrs.get(dm.ATTR_SKELETON) else "incomplete"
    n_items = emb_arr.shape[0]
    for coord in dm.ITEM_COORDS:
        try:
            arr = group[coord]
        except KeyError:
            problems.append(f"{name}: item coordinate '{coord}' is missing")
            return "corrupt"
        if arr.shape[0] != n_items:
            problems.append(f"{name}: '{coord}' has {arr.shape[0]} items, embedding has {n_items}")
            return "corrupt"
    if not group.attrs.get(dm.ATTR_SKELETON, False):
        problems.append(f"{name}: layout write was interrupted (re-run the same command)")
        return "incomplete"
    done, total = _progress(group)
    complete = bool(group.attrs.get(dm.ATTR_COMPLETE, False))
    if complete and done != total:
        problems.append(f"{name}: marked complete but only {done} of {total} blocks are written")
        return "corrupt"
    if not complete:
        problems.append(
            f"{name}: incomplete, {done} of {total} blocks written; re-run the same 'emb extract'"
        )
    if deep:
        markers = _read_done(group[f"{dm.PROGRESS_GROUP}/done"])
        block = int(group.attrs[dm.ATTR_EXTRACTION]["block_size"])
        for b in np.flatnonzero(markers):
            try:
                values = np.asarray(emb_arr[b * block : (b + 1) * block])
            except Exception as err:  # noqa: BLE001 - report any decode failure
                problems.append(f"{name}: block {b} cannot be decoded: {err}")
                return "corrupt"
            if not np.isfinite(values).all():
                problems.append(f"{name}: block {b} holds non-finite values")
                return "corrupt"
    return "complete" if complete else "incomplete"


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
    ]
    for s in info.suites:
        state = "complete" if s.complete else f"INCOMPLETE ({s.blocks_done}/{s.blocks_total} blocks)"
        per_item = (
            f", {_human(info.size_bytes / max(1, sum(x.n_items for x in info.suites)))} per item"
            if info.size_bytes
            else ""
        )
        lines.append(
            f"suite     {s.name}: {s.n_items} items × {s.n_layers} layers × {len(s.poolings)} poolings "
            f"({','.join(s.poolings)}) × {s.n_features} ({s.storage_dtype}); settings "
            f"{','.join(s.settings)}; {state}{per_item}"
        )
    lines.append(f"status    {'complete' if info.complete else 'incomplete'}")
    return "\n".join(lines)


def _human(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n} B"


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
