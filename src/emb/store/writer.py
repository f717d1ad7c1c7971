"""Writing suite groups: layout first, then one shard per block, each followed by its done-marker.

Crash safety.  A suite group is written in this order:

1. the coordinates (laid out as xarray writes them), the empty sharded ``embedding`` array and the
   ``_progress/done`` markers, then the group attribute ``skeleton_written``;
2. for each block of ``block_size`` items: one shard of ``embedding`` (a single object in the store),
   then that block's done-marker (a one-byte chunk of its own);
3. the attribute ``complete``.

A run killed at any moment therefore leaves either a group without ``skeleton_written`` (the next run
rewrites it) or blocks whose markers say exactly what is finished: a torn or missing shard is never
marked done, and the next run rewrites every block that is not.  The pipeline computes blocks from
the suite's items alone, in windows it stores, so a resumed store ends bitwise identical to an
uninterrupted one.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, Future
from datetime import UTC, datetime
from typing import Any

import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous
import zarr.codecs
from zarr.core.sync import sync as zarr_sync

from emb.errors import StoreError, StoreMismatchError
from emb.schemas import datamodel as dm
from emb.store._location import open_zarr_store
from emb.store.store import _read_done

__all__ = [
    "MODEL_IDENTITY_KEYS",
    "SuiteWriter",
    "block_size_for",
    "extraction_differences",
    "open_for_writing",
    "read_rows",
]

#: Model attributes that must match to write into an existing store.
MODEL_IDENTITY_KEYS = ("model_id", "revision", "fingerprint")
#: Extraction settings that must match to resume a suite or reuse its vectors.
EXTRACTION_IDENTITY_KEYS = ("dtype", "storage_dtype", "poolings", "bos", "layers")

_TARGET_SHARD_BYTES = 16 * 2**20


def block_size_for(n_layers: int, n_poolings: int, n_features: int, itemsize: int) -> int:
    """Items per shard: a power of two in [16, 512] keeping a shard at most 16 MiB.

    Small enough that writing the last block (which nothing overlaps) is quick and a block of
    float32 activations stays small in memory; large enough that an analysis reading one layer
    of 50,000 items touches only ~100 inner chunks.
    """
    per_item = n_layers * n_poolings * n_features * itemsize
    size = 512
    while size > 16 and size * per_item > _TARGET_SHARD_BYTES:
        size //= 2
    return size


def _compressor() -> zarr.codecs.BloscCodec:
    # Blosc-LZ4, no shuffle, clevel 1.  Most of what compresses is repetition: a word of one
    # subtoken has first = last = mean = max, and an inner chunk holds a layer's four poolings
    # side by side, so LZ4 stores three of them as back-references.  Measured on MiniLM-L6 VAST
    # vectors (Warriner + corpus, 39% multi-subtoken words): ratio 1.82 at 6.3 GB/s encode and
    # 15 GB/s decode.  Bit-shuffle scatters those repeats: 1.57 at 1.8 / 3.7 GB/s (it gains 9%
    # only on vectors with nothing repeated); zstd 2.0-2.3 at 0.2-0.7 GB/s encode.
    return zarr.codecs.BloscCodec(cname="lz4", clevel=1, shuffle="noshuffle")


def open_for_writing(
    location: str, *, model: Mapping[str, Any], storage_options: dict[str, Any] | None = None
) -> tuple[Any, zarr.Group]:
    """Open (or create) a store for ``model``; refuse one written by another model or revision."""
    zstore = open_zarr_store(location, mode="a", storage_options=storage_options)
    root = zarr.open_group(zstore, mode="a", zarr_format=3, use_consolidated=False)
    existing = root.attrs.get(dm.ATTR_MODEL)
    if existing:
        diffs = [
            f"{key}: store has {existing.get(key)!r}, this run has {model.get(key)!r}"
            for key in MODEL_IDENTITY_KEYS
            if existing.get(key) != model.get(key)
        ]
        if diffs:
            raise StoreMismatchError(
                f"{location} holds embeddings of another model ({'; '.join(diffs)}); "
                "write this model into a new store (one store per model)"
            )
        version = root.attrs.get(dm.ATTR_SCHEMA_VERSION)
        if version != dm.STORE_SCHEMA_VERSION:
            raise StoreMismatchError(
                f"{location} has store schema version {version}, this emb writes "
                f"{dm.STORE_SCHEMA_VERSION}; write into a new store"
            )
    else:
        root.update_attributes(
            {dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION, dm.ATTR_MODEL: dict(model)}
        )
    return zstore, root


class SuiteWriter:
    """Writes one suite group block by block.  Constructed by :meth:`open`."""

    def __init__(
        self,
        location: str,
        root: zarr.Group,
        name: str,
        *,
        block_size: int,
        n_items: int,
        extraction: Mapping[str, Any],
        fresh: bool,
        handles: tuple[zarr.Group, zarr.Array, zarr.Array] | Future[Any],
    ) -> None:
        self.location = location
        self.root = root
        self.name = name
        self.block_size = block_size
        self.n_items = n_items
        self.extraction = extraction
        self.fresh = fresh
        self._handles = handles

    def _resolved(self) -> tuple[zarr.Group, zarr.Array, zarr.Array]:
        """The group and its arrays, once the layout (maybe written in the background) exists."""
        if isinstance(self._handles, Future):
            self._handles = self._handles.result()
        return self._handles

    @property
    def group(self) -> zarr.Group:
        return self._resolved()[0]

    @property
    def array(self) -> zarr.Array:
        return self._resolved()[1]

    @property
    def done(self) -> zarr.Array:
        return self._resolved()[2]

    @staticmethod
    def _open_handles(root: zarr.Group, name: str) -> tuple[zarr.Group, zarr.Array, zarr.Array]:
        group = zarr.open_group(root.store, path=name, mode="a", zarr_format=3, use_consolidated=False)
        # Every block is written whole and holds no fill value (non-finite values are refused), so
        # zarr's per-chunk "is it empty?" scan is pure cost: it tripled the write time.
        array = group[dm.EMBEDDING].with_config({"write_empty_chunks": True})  # type: ignore[union-attr]
        done = group[f"{dm.PROGRESS_GROUP}/done"]
        return group, array, done  # type: ignore[return-value]

    # -- layout -------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        location: str,
        root: zarr.Group,
        *,
        name: str,
        coords: xr.Dataset,
        shape: tuple[int, int, int, int],
        storage_dtype: str,
        suite_attrs: Mapping[str, Any],
        extraction_attrs: Mapping[str, Any],
        overwrite: bool = False,
        block_size: int | None = None,
        executor: Executor | None = None,
    ) -> SuiteWriter:
        """Create the group's layout, or reopen an unfinished group written by the same command.

        With an ``executor`` (the single writer thread), a new layout is written there, ahead of
        the blocks submitted after it, while the caller computes the first block; checks that can
        refuse the write always run here, before anything is written.

        Raises
        ------
        StoreMismatchError
            The group exists with another suite definition or other extraction settings.
        """
        n_items, n_layers, n_poolings, n_features = shape
        block = block_size or block_size_for(
            n_layers, n_poolings, n_features, np.dtype(storage_dtype).itemsize
        )
        if block < 1:
            raise StoreError(f"block size must be >= 1; got {block}")
        extraction = {**extraction_attrs, "block_size": block}
        if name in root:
            group = root[name]
            if not isinstance(group, zarr.Group):
                raise StoreError(f"{location}/{name} is not a group; remove it or choose another name")
            if overwrite:
                del root[name]
            elif group.attrs.get(dm.ATTR_SKELETON):
                _check_same(location, name, group, suite_attrs, extraction)
                stored = dict(group.attrs[dm.ATTR_EXTRACTION])
                return cls(
                    location, root, name, block_size=int(stored["block_size"]), n_items=n_items,
                    extraction=stored, fresh=False, handles=cls._open_handles(root, name),
                )
            else:  # layout write interrupted: nothing of value in it
                del root[name]

        def layout() -> tuple[zarr.Group, zarr.Array, zarr.Array]:
            cls._write_layout(root, name, coords, shape, storage_dtype, block, suite_attrs, extraction)
            return cls._open_handles(root, name)

        return cls(
            location, root, name, block_size=block, n_items=n_items, extraction=extraction,
            fresh=True, handles=executor.submit(layout) if executor is not None else layout(),
        )

    @staticmethod
    def _write_layout(
        root: zarr.Group,
        name: str,
        coords: xr.Dataset,
        shape: tuple[int, int, int, int],
        storage_dtype: str,
        block: int,
        suite_attrs: Mapping[str, Any],
        extraction: Mapping[str, Any],
    ) -> None:
        n_items, n_layers, n_poolings, n_features = shape
        # the non-dimension coordinates (all along item): named in the group's and the
        # embedding's "coordinates" attribute, which makes xarray read them as coordinates
        coordinate_names = " ".join(str(k) for k in coords.coords if k not in coords.dims)
        n_blocks = max(1, -(-n_items // block))
        arrays: list[dict[str, Any]] = [
            {  # the coordinates, laid out as xarray's to_zarr writes them
                "name": f"{name}/{key}",
                "shape": var.shape,
                "dtype": _coord_dtype(var.values.dtype),
                "chunks": tuple(max(1, n) for n in var.shape),
                "dimension_names": tuple(str(d) for d in var.dims),
            }
            for key, var in coords.coords.items()
        ]
        data = [var.values for var in coords.coords.values()]
        arrays.append(
            {
                "name": f"{name}/{dm.EMBEDDING}",
                "shape": shape,
                "dtype": storage_dtype,
                "chunks": (block, 1, n_poolings, n_features),
                "shards": (block, n_layers, n_poolings, n_features),
                "compressors": _compressor(),
                "fill_value": np.nan,
                "dimension_names": dm.DIMS,
                "attributes": {
                    "coordinates": coordinate_names,
                    "long_name": "contextual embedding of the target",
                },
            }
        )
        arrays.append(
            {
                "name": f"{name}/{dm.PROGRESS_GROUP}/done",
                "shape": (n_blocks,),
                "dtype": "uint8",
                "chunks": (1,),
                "compressors": None,
                "fill_value": 0,
                "dimension_names": ("block",),
            }
        )
        attributes = {
            "coordinates": coordinate_names,
            dm.ATTR_SCHEMA_VERSION: dm.STORE_SCHEMA_VERSION,
            dm.ATTR_MODEL: dict(root.attrs[dm.ATTR_MODEL]),
            dm.ATTR_SUITE: dict(suite_attrs),
            dm.ATTR_EXTRACTION: dict(extraction),
            dm.ATTR_CREATED: datetime.now(UTC).isoformat(timespec="seconds"),
            dm.ATTR_COMPLETE: n_items == 0,
        }

        async def write_all() -> None:
            # one round trip to zarr's event loop for the group and all its arrays (writing them
            # one sync call at a time, through xarray, took twice as long)
            await zarr.api.asynchronous.open_group(
                root.store, path=name, mode="w", zarr_format=3, attributes=attributes
            )
            created = await asyncio.gather(
                *(
                    zarr.api.asynchronous.create_array(root.store, zarr_format=3, **spec)
                    for spec in arrays
                )
            )
            coordinate_arrays = created[: len(data)]
            await asyncio.gather(
                *(
                    array.setitem(..., values)
                    for array, values in zip(coordinate_arrays, data, strict=True)
                    if values.size
                )
            )

        zarr_sync(write_all())
        group = zarr.open_group(root.store, path=name, mode="a", zarr_format=3, use_consolidated=False)
        group.attrs[dm.ATTR_SKELETON] = True  # last: the layout is whole
        consolidate(root)

    # -- blocks -------------------------------------------------------------------------------------
    def block_ranges(self) -> list[tuple[int, int]]:
        n = self.n_items
        return [(s, min(s + self.block_size, n)) for s in range(0, n, self.block_size)]

    def pending_blocks(self) -> list[int]:
        """Blocks whose done-marker is not set."""
        done = _read_done(self.done)
        return [i for i in range(len(self.block_ranges())) if not done[i]]

    def write_block(self, index: int, values: np.ndarray) -> None:
        """Write block ``index`` (one shard), then its done-marker."""
        start, stop = self.block_ranges()[index]
        if values.shape != (stop - start, *self.array.shape[1:]):
            raise StoreError(
                f"block {index} of {self.name!r} has shape {values.shape}, expected "
                f"{(stop - start, *self.array.shape[1:])}"
            )
        self.array[start:stop] = values
        self.done[index] = 1

    def read_rows(self, rows: Sequence[int]) -> np.ndarray:
        """Rows already written (for vectors reused by later items)."""
        return read_rows(self.array, rows)

    def finish(self) -> None:
        """Mark the suite complete (after every block's marker is set)."""
        pending = self.pending_blocks()
        if pending:
            raise StoreError(f"cannot finish {self.name!r}: blocks {pending[:10]} are not written")
        self.group.attrs[dm.ATTR_COMPLETE] = True
        consolidate(self.root)


def _coord_dtype(dtype: np.dtype) -> Any:
    # text as zarr v3 variable-length UTF-8 strings, the type xarray writes and reads for str
    if dtype.kind in "OU":
        return zarr.dtype.VariableLengthUTF8()  # type: ignore[attr-defined]
    return dtype


def read_rows(array: zarr.Array, rows: Sequence[int]) -> np.ndarray:
    """``array[rows]`` along the first axis for any row order (zarr wants sorted indices)."""
    idx = np.asarray(rows, dtype=np.int64)
    if idx.size == 0:
        return np.empty((0, *array.shape[1:]), dtype=array.dtype)
    order = np.argsort(idx, kind="stable")
    values = array.get_orthogonal_selection((idx[order],))
    out = np.empty_like(values)
    out[order] = values
    return out


def consolidate(root: zarr.Group) -> None:
    """Refresh the root's consolidated metadata so plain ``xr.open_zarr(path, group=...)`` opens
    groups in one read without warnings.  emb itself never trusts it (it reads with
    ``consolidated=False``), so a copy made stale by an interrupted run is harmless."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        zarr.consolidate_metadata(root.store, zarr_format=3)


def _check_same(
    location: str,
    name: str,
    group: zarr.Group,
    suite_attrs: Mapping[str, Any],
    extraction: Mapping[str, Any],
) -> None:
    old_suite = group.attrs.get(dm.ATTR_SUITE, {})
    if old_suite.get("content_hash") != suite_attrs.get("content_hash"):
        raise StoreMismatchError(
            f"suite {name!r} in {location} was written from another definition (content hash "
            f"{str(old_suite.get('content_hash'))[:12]}…, this run {str(suite_attrs.get('content_hash'))[:12]}…); "
            "use --name to write it as another suite, or --overwrite to replace it"
        )
    diffs = extraction_differences(group.attrs.get(dm.ATTR_EXTRACTION, {}), extraction)
    if diffs:
        raise StoreMismatchError(
            f"suite {name!r} in {location} was extracted with other settings ({'; '.join(diffs)}); "
            "use --name to write it as another suite, or --overwrite to replace it"
        )


def extraction_differences(stored: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """The identity settings (dtype, storage dtype, poolings, BOS) on which two extractions differ."""
    return [
        f"{k}: store {stored.get(k)!r} vs run {run.get(k)!r}"
        for k in EXTRACTION_IDENTITY_KEYS
        if _norm(stored.get(k)) != _norm(run.get(k))
    ]


def _norm(value: Any) -> Any:
    return list(value) if isinstance(value, (tuple, list)) else value
