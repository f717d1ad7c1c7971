"""Writing suite groups: layout first, then one shard per block, each followed by its done-marker.

Crash safety.  A suite group is written in this order:

1. the coordinates (laid out as xarray writes them), the empty sharded ``embedding`` array and the
   ``_progress/done`` markers, then the group attribute ``skeleton_written``;
2. for each block of ``block_size`` items: one shard of ``embedding`` (a single object in the store),
   then that block's done-marker (a one-byte chunk of its own);
3. the manifest (every object of the group with its size and CRC-32, see
   :mod:`emb.store.manifest`), then the attribute ``complete`` (with ``oom_backoffs``, the
   out-of-memory back-offs of the runs that wrote the suite, where any run backed off: until
   then each such run's record is ``_progress/backoffs.<run>.json``, see
   :mod:`emb.store._backoffs`).

A run killed at any moment therefore leaves either a group without ``skeleton_written`` (the next run
rewrites it) or blocks whose markers say exactly what is finished: a torn or missing shard is never
marked done, and the next run rewrites every block that is not.  The pipeline computes blocks from
the suite's items alone, in windows it stores, so a resumed store ends bitwise identical to an
uninterrupted one.

One writer at a time.  A writer holds its suite's lock (:mod:`emb.store.lock`) from the moment it
looks at the group until the suite is complete, and the root's lock while it changes the root.
A group is only ever deleted when it is the one being rewritten (``overwrite``, or the same
suite's interrupted layout), and deleted flags first, data next, its ``zarr.json`` last, so a
deletion cut short reads as an interrupted layout, never as a corrupt suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous
import zarr.errors
import zarr.storage

from emb.errors import CorruptStoreError, StoreError, StoreLockedError
from emb.schemas import datamodel as dm
from emb.store._backoffs import delete_pending, merged, pending_runs, write_run
from emb.store._layout import block_size_for, chunk_codecs, coord_layout, read_rows
from emb.store._location import is_url, local_path
from emb.store._nodes import digest, list_prefix, named_children, read_bytes
from emb.store._shard_bytes import EncodedShard, ShardEncoder, all_finite, write_parts
from emb.store._write_checks import ROOT_LOCK_WAIT_S, plan_group
from emb.store._zarr import as_buffer
from emb.store._zarr import sync as zarr_sync
from emb.store.lock import WriterLock, locked
from emb.store.manifest import build_manifest, covered
from emb.store.names import check_group_name
from emb.store.shards import (
    DONE,
    TOKENS_PREFIX,
    ShardRecord,
    drop_digests,
    drop_tokens,
    read_markers,
    read_record,
    record_digest,
    record_shards,
    record_tokens,
    recorded_digests,
    shard_layout_guard,
    shard_lock_path,
    write_marker,
)
from emb.store.shards import writer_lock as _take_lock
from emb.store.validate import shard_key, stale_consolidated

__all__ = [
    "SuiteWriter",
    "block_size_for",
    "read_rows",
]


def _delete_group(zstore: Any, name: str, *, flags: bool) -> None:
    """Delete group ``name``: its completion flags first (``flags``: its metadata reads), then
    its objects, its ``zarr.json`` last, so a deletion cut short reads as an interrupted layout."""
    check_group_name(name)
    if flags:
        group = zarr.open_group(zstore, path=name, mode="r+", zarr_format=3, use_consolidated=False)
        group.update_attributes({dm.ATTR_SKELETON: False, dm.ATTR_COMPLETE: False})
    keys = [k for k in list_prefix(zstore, name) if k != f"{name}/zarr.json"]

    async def delete_all() -> None:
        gate = asyncio.Semaphore(32)

        async def one(key: str) -> None:
            async with gate:
                await zstore.delete(key)

        await asyncio.gather(*(one(k) for k in keys))
        await zstore.delete(f"{name}/zarr.json")

    zarr_sync(delete_all())


@contextlib.contextmanager
def _write_errors(what: str) -> Iterator[None]:
    """Turn a failing write (a read-only or full disk, a vanished directory) into a StoreError."""
    try:
        yield
    except OSError as err:
        raise StoreError(
            f"cannot write {what}: {err.strerror or err}; the store must stay writable (and "
            "have room) while 'emb extract' runs; re-run the same command to resume"
        ) from err


#: Model attributes that describe how one run placed the weights, not which model it is: a suite
#: group records its own run's, not those of the run that created the store.
RUN_PLACEMENT_KEYS = ("loaded_blocks", "memory")


def group_model(store_model: Mapping[str, Any], run_model: Mapping[str, Any] | None) -> dict[str, Any]:
    """A suite group's ``model`` attribute: the store's (the model's identity, checked equal to
    the run's), with the placement of the run laying the group out (:data:`RUN_PLACEMENT_KEYS`:
    the blocks it loaded, its memory plan; absent where that run had none)."""
    out = dict(store_model)
    if run_model is None:
        return out
    for key in RUN_PLACEMENT_KEYS:
        if run_model.get(key) is not None:
            out[key] = run_model[key]
        else:
            out.pop(key, None)
    return out


class SuiteWriter:
    """Writes one suite group block by block.  Constructed by :meth:`open`; holds the suite's
    writer lock (local stores) until :meth:`finish` or :meth:`close`."""

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
        lock: WriterLock | None = None,
        shard: str | None = None,
    ) -> None:
        self.location = location
        self.shard = shard  # "shard-I-of-N" for a shard writer
        self.root = root
        self.name = name
        self.block_size = block_size
        self.n_items = n_items
        self.extraction = extraction
        self.fresh = fresh
        self.lock = lock
        self._handles = handles
        self._digests: dict[str, tuple[int, str]] = {}
        self._encoder: ShardEncoder | None | bool = False  # False: not looked up yet
        now = datetime.now(UTC)
        #: this run's id and start, for its out-of-memory back-off record
        self.run = f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        self.started = now.isoformat(timespec="microseconds")  # orders runs of one second

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
        coords: xr.Dataset | Callable[[], xr.Dataset],
        shape: tuple[int, int, int, int],
        storage_dtype: str,
        suite_attrs: Mapping[str, Any],
        extraction_attrs: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        overwrite: bool = False,
        block_size: int | None = None,
        executor: Executor | None = None,
        shard: str | None = None,
        identity: Mapping[str, Any] | None = None,
        scanned: Mapping[str, Any] | None = None,
        run_model: Mapping[str, Any] | None = None,
    ) -> SuiteWriter:
        """Create the group's layout, or reopen an unfinished group written by the same command.

        ``coords`` and ``extraction_attrs`` may be functions that make them, called only when the
        layout is written (a resumed group needs neither); ``identity``: the extraction settings
        a stored group must match (default: ``extraction_attrs``); ``scanned``: the group's
        attributes as this process's check found them, the group resumable (its damage scan is
        not repeated while they are unchanged: see :func:`~emb.store._write_checks.plan_group`);
        ``run_model``: the model attributes of the run laying the group out, whose placement
        (:data:`RUN_PLACEMENT_KEYS`) the group records instead of the store's first run's.

        Takes the suite's writer lock first (local stores; a shard writer, ``shard`` =
        ``"shard-I-of-N"``, takes its shard's lock and the suite's only while it lays the suite
        out, see :mod:`emb.store.shards`), and keeps it until :meth:`finish` or
        :meth:`close`.  With an ``executor`` (the single writer thread), a new layout is written
        there, ahead of the blocks submitted after it, while the caller computes the first
        block; checks that can refuse the write always run here, before anything is written.

        Raises
        ------
        StoreLockedError
            Another process is writing this suite.
        StoreMismatchError
            The group exists with another suite definition or other extraction settings, or holds
            something emb did not write (refused unless ``overwrite``).
        CorruptStoreError
            The group's metadata is damaged (refused unless ``overwrite``).
        """
        check_group_name(name)
        n_items, n_layers, n_poolings, n_features = shape
        block = block_size or block_size_for(
            n_layers, n_poolings, n_features, np.dtype(storage_dtype).itemsize
        )
        if block < 1:
            raise StoreError(f"block size must be >= 1; got {block}")

        def extraction() -> dict[str, Any]:
            made = extraction_attrs() if callable(extraction_attrs) else extraction_attrs
            return {**made, "block_size": block}

        checked = {**(identity if identity is not None else extraction()), "block_size": block}
        lock = _take_lock(location, name, shard)
        try:
            zstore = root.store

            def start(action: str, attrs: Mapping[str, Any] | None, *, background: bool) -> SuiteWriter:
                if action == "resume":
                    assert attrs is not None
                    stored = dict(attrs[dm.ATTR_EXTRACTION])
                    try:
                        handles = cls._open_handles(root, name)
                    except KeyError as err:  # lost since the scan (see plan_group's `scanned`)
                        raise CorruptStoreError(
                            f"suite {name!r} in {location} is damaged (its array "
                            f"{err.args[0] if err.args else ''!r} is missing); re-extract it with "
                            "--overwrite ('emb validate' gives the whole report)"
                        ) from err
                    writer = cls(
                        location, root, name, block_size=int(stored["block_size"]),
                        n_items=n_items, extraction=stored, fresh=False,
                        handles=handles, lock=lock, shard=shard,
                    )
                    if shard is None:  # shard writers may be writing beside us: keep their files
                        writer._drop_partial_files()
                    return writer
                attrs_made = extraction()  # made (maybe tokenising) before anything is deleted
                coords_made = coords() if callable(coords) else coords
                if action in ("replace", "rewrite"):
                    with _write_errors(f"(delete) the group {name!r} of {location}"):
                        _delete_group(zstore, name, flags=attrs is not None)
                elif not is_url(location):  # "new": what a killed layout write left is temporary
                    for key in list_prefix(zstore, name):
                        if key.endswith(".partial"):
                            with contextlib.suppress(OSError):
                                (local_path(location) / key).unlink()

                def layout() -> tuple[zarr.Group, zarr.Array, zarr.Array]:
                    with _write_errors(f"the layout of suite {name!r} into {location}"):
                        cls._write_layout(
                            location, root, name, coords_made, shape, storage_dtype, block,
                            suite_attrs, attrs_made, run_model,
                        )
                    return cls._open_handles(root, name)

                return cls(
                    location, root, name, block_size=block, n_items=n_items, extraction=attrs_made,
                    fresh=True, handles=executor.submit(layout) if background and executor else layout(),
                    lock=lock, shard=shard,
                )

            def plan() -> tuple[str, dict[str, Any] | None]:
                return plan_group(
                    location, zstore, name=name, suite_attrs=suite_attrs, extraction=checked,
                    overwrite=overwrite, scanned=scanned,
                )

            if shard is None:
                return start(*plan(), background=True)
            # shard writers: the layout is written once, by whoever gets its guard first
            with shard_layout_guard(zstore, location, name) as guarded:
                action, attrs = plan()
                if action != "resume" and not guarded:  # written by another worker meanwhile
                    action, attrs = plan()
                return start(action, attrs, background=False)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    @staticmethod
    def _write_layout(
        location: str,
        root: zarr.Group,
        name: str,
        coords: xr.Dataset,
        shape: tuple[int, int, int, int],
        storage_dtype: str,
        block: int,
        suite_attrs: Mapping[str, Any],
        extraction: Mapping[str, Any],
        run_model: Mapping[str, Any] | None = None,
    ) -> None:
        n_items, n_layers, n_poolings, n_features = shape
        # the non-dimension coordinates (all along item): named in the group's and the
        # embedding's "coordinates" attribute, which makes xarray read them as coordinates
        coordinate_names = " ".join(str(k) for k in coords.coords if k not in coords.dims)
        n_blocks = max(1, -(-n_items // block))
        arrays: list[dict[str, Any]] = []
        data = []
        for key, var in coords.coords.items():
            dtype, values, attributes = coord_layout(
                var.values, label=key not in dm.RESERVED_NAMES
            )
            arrays.append(
                {  # the coordinates, laid out as xarray's to_zarr writes them
                    "name": f"{name}/{key}",
                    "shape": var.shape,
                    "dtype": dtype,
                    "chunks": tuple(max(1, n) for n in var.shape),
                    "dimension_names": tuple(str(d) for d in var.dims),
                    "attributes": attributes,
                }
            )
            data.append(values)
        arrays.append(
            {
                "name": f"{name}/{dm.EMBEDDING}",
                "shape": shape,
                "dtype": storage_dtype,
                "chunks": (block, 1, n_poolings, n_features),
                "shards": (block, n_layers, n_poolings, n_features),
                "compressors": chunk_codecs(),
                "fill_value": np.nan,
                "dimension_names": dm.DIMS,
                "attributes": {
                    "coordinates": coordinate_names,
                    "long_name": dm.EMBEDDING_LONG_NAME,
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
            dm.ATTR_GENERATION: uuid.uuid4().hex,  # this layout's id: readers notice a rewrite
            dm.ATTR_MODEL: group_model(root.attrs[dm.ATTR_MODEL], run_model),
            dm.ATTR_SUITE: dict(suite_attrs),
            dm.ATTR_EXTRACTION: dict(extraction),
            dm.ATTR_CREATED: datetime.now(UTC).isoformat(timespec="seconds"),
            dm.ATTR_COMPLETE: False,
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
        consolidate(root, location)

    # -- blocks -------------------------------------------------------------------------------------
    def block_ranges(self) -> list[tuple[int, int]]:
        n = self.n_items
        return [(s, min(s + self.block_size, n)) for s in range(0, n, self.block_size)]

    def pending_blocks(self) -> list[int]:
        """Blocks whose done-marker is not set (``DONE``; read as :meth:`markers`: a local
        store's one-byte files directly, 5x faster than zarr's chunk reads)."""
        n_blocks = len(self.block_ranges())  # an empty suite's one marker is no block
        return np.flatnonzero(self.markers()[:n_blocks] != DONE).tolist()

    def markers(self, blocks: Sequence[int] | None = None) -> np.ndarray:
        """The raw done-markers (0 not written, ``DONE``, ``COPIES_PENDING``: see
        :mod:`emb.store.shards`): of every block, one that cannot be decoded read as 0; or of
        ``blocks`` alone, as stored."""
        if blocks is None:
            return read_markers(self.done)
        return np.asarray(self.done.get_orthogonal_selection((np.asarray(blocks),)))

    @property
    def complete(self) -> bool:
        """Whether the group is marked complete (its manifest written)."""
        return bool(self.group.attrs.get(dm.ATTR_COMPLETE))

    @property
    def encoder(self) -> ShardEncoder | None:
        """The encoder of this suite's shards (:mod:`emb.store._shard_bytes`); None when the
        array's codecs are not schema 3's chain (a resumed older store: zarr writes its blocks)."""
        if self._encoder is False:
            self._encoder = ShardEncoder.of(self.array)
        return self._encoder  # type: ignore[return-value]

    def encode_block(self, index: int, values: np.ndarray) -> EncodedShard:
        """Block ``index``'s shard as bytes, with their CRC-32 and whether every value is
        finite (one pass over each inner chunk while it is encoded), nothing written; without
        bytes where zarr writes this array's blocks (:attr:`encoder`).  Thread-safe: several
        blocks encode at once (Blosc releases the GIL)."""
        start, stop = self.block_ranges()[index]
        if values.shape != (stop - start, *self.array.shape[1:]):
            raise StoreError(
                f"block {index} of {self.name!r} has shape {values.shape}, expected "
                f"{(stop - start, *self.array.shape[1:])}"
            )
        encoder = self.encoder
        if encoder is None:
            return EncodedShard(parts=None, size=0, crc32="", finite=all_finite(values))
        if values.dtype != encoder.dtype:
            values = values.astype(encoder.dtype)
        return encoder.encode(values)

    def write_block(
        self, index: int, values: np.ndarray, *, marker: int = 1, encoded: EncodedShard | None = None
    ) -> None:
        """Write block ``index`` (one shard), then its done-marker (``marker``: 1 done, 2 rows
        copied from other shards still pending, see :mod:`emb.store.shards`).

        The shard is assembled in memory (``encoded``, from :meth:`encode_block`, or encoded
        here) and written in one write (one PUT) through the store, a local store's atomic
        rename as zarr's; its size and CRC-32 for the manifest are those bytes'.  An array zarr
        writes (see :attr:`encoder`) is written by assignment and its shard read back and hashed.

        The one place a block's vectors reach the store (the pipeline calls it on its writer
        threads): how a shard is encoded and written changes here, its order (shard, then
        marker) never."""
        start, stop = self.block_ranges()[index]
        if encoded is None and self.encoder is not None:
            encoded = self.encode_block(index, values)
        elif values.shape != (stop - start, *self.array.shape[1:]):
            raise StoreError(
                f"block {index} of {self.name!r} has shape {values.shape}, expected "
                f"{(stop - start, *self.array.shape[1:])}"
            )
        with _write_errors(f"block {index} of suite {self.name!r} into {self.location}"):
            key = shard_key(self.name, self.array, index)
            if encoded is not None and encoded.parts is not None:
                zstore = self.root.store
                if isinstance(zstore, zarr.storage.LocalStore) and not zstore.read_only:  # zarr's rename
                    # on the disk before its marker is written (a crash of the machine)
                    write_parts(Path(zstore.root) / key, encoded.parts, durable=True)
                else:  # one PUT
                    zarr_sync(zstore.set(key, as_buffer(encoded.data)))
                entry: tuple[int, str] | None = (encoded.size, encoded.crc32)
            else:
                self.array[start:stop] = values
                raw = read_bytes(self.root.store, key)
                entry = None if raw is None else (len(raw), digest(raw))
            rel = covered(self.name, key) or key
            if entry is not None:
                # a block written with copies pending is written again (by whichever worker
                # settles it, perhaps another): only a done block's bytes are final
                if marker == DONE:
                    self._digests[rel] = entry
                else:
                    self._digests.pop(rel, None)
                if self.shard is not None:  # for the worker that writes the manifest
                    record_digest(self.root.store, self.name, index, rel, *entry)
            write_marker(self.done, index, marker)

    def read_rows(self, rows: Sequence[int]) -> np.ndarray:
        """Rows already written (for vectors reused by later items)."""
        return read_rows(self.array, rows)

    def read_block(self, index: int) -> np.ndarray:
        """Block ``index`` as stored (a copy the caller may change)."""
        start, stop = index * self.block_size, min(self.n_items, (index + 1) * self.block_size)
        return np.asarray(self.array[start:stop])

    # -- shard writers (see emb.store.shards) ---------------------------------------------------------
    def shard_record(self) -> ShardRecord | None:
        """The suite's shard record, or None (never sharded, or a record that does not parse)."""
        return read_record(self.root.store, self.name)

    def record_shards(self, record: ShardRecord) -> ShardRecord:
        """Create the suite's shard record, or check this worker's ``record`` against the one
        there (:func:`emb.store.shards.record_shards`); the record that rules.

        Raises
        ------
        StoreMismatchError
            The suite is being extracted with another shard count or plan.
        """
        return record_shards(self.root.store, self.location, self.name, record)

    def record_tokens(self, label: str, data: bytes) -> None:
        """Keep the encodings of shard ``label``'s contexts for its worker
        (:func:`emb.store.shards.record_tokens`); deleted when the suite is complete."""
        self._resolved()  # after the layout, which a fresh suite's writes begin with
        with _write_errors(f"the encodings of {label} of suite {self.name!r} into {self.location}"):
            record_tokens(self.root.store, self.name, label, data)

    def drop_tokens(self) -> None:
        """Delete every shard's kept encodings (:func:`emb.store.shards.drop_tokens`)."""
        drop_tokens(self.root.store, self.name)

    def drop_digests(self) -> None:
        """Delete the shards' digest records a finishing worker killed after the manifest, before
        it deleted them, left (one listing; nothing more where there are none)."""
        found = named_children(self.root.store, f"{self.name}/{dm.PROGRESS_GROUP}",
                               starts="digest.", ends=".json")
        blocks = [int(b) for n in found if (b := n[len("digest."):-len(".json")]).isdigit()]
        if blocks:
            drop_digests(self.root.store, self.name, blocks)

    # -- provenance ---------------------------------------------------------------------------------
    def record_backoffs(self, record: Mapping[str, Any]) -> None:
        """Write (or rewrite) this run's out-of-memory back-off record (its ``halvings``,
        ``batches``, ``stopped`` …; see :mod:`emb.store._backoffs`) in an object of its own,
        folded into the group's ``oom_backoffs`` attribute when the suite is completed.  Called
        before the blocks computed after a halving are marked done, so the worker that
        completes the suite finds every run's record."""
        full = {"run": self.run, "started": self.started, "shard": self.shard, **record}
        with _write_errors(f"the out-of-memory record of suite {self.name!r} into {self.location}"):
            write_run(self.root.store, self.name, full)

    def finish(self, *, markers: np.ndarray | None = None) -> None:
        """Write the manifest, mark the suite complete, and release the suite's lock.

        ``markers``: the raw done-markers (:meth:`markers`) the caller read after its last
        write and found all ``DONE``; not read again (reading them again a moment later
        vouches for nothing more: they could change a moment after any read)."""
        pending = (
            self.pending_blocks() if markers is None
            else np.flatnonzero(np.asarray(markers) != DONE).tolist()
        )
        if pending:
            raise StoreError(f"cannot finish {self.name!r}: blocks {pending[:10]} are not written")
        n_blocks = len(self.block_ranges())
        with _write_errors(f"the manifest of suite {self.name!r} into {self.location}"):
            known = dict(self._digests)
            if self.shard is not None:  # the other workers' shards, as they recorded them
                known = {**recorded_digests(self.root.store, self.name, range(n_blocks)), **known}
            manifest = build_manifest(
                self.root.store, self.name, n_blocks=n_blocks,
                block_size=self.block_size, n_items=self.n_items, known=known,
            )
            progress = zarr.open_group(
                self.root.store, path=f"{self.name}/{dm.PROGRESS_GROUP}", mode="a",
                zarr_format=3, use_consolidated=False,
            )
            progress.attrs[dm.ATTR_MANIFEST] = manifest
            runs = pending_runs(self.root.store, self.name)
            if runs:  # the runs' back-off records join the suite's provenance, with the flag
                stored = self.group.attrs.get(dm.ATTR_BACKOFFS)
                self.group.update_attributes({
                    dm.ATTR_BACKOFFS: merged(stored if isinstance(stored, list) else [], runs),
                    dm.ATTR_COMPLETE: True,
                })
                if self.shard is None:  # the only writer: nobody adds one meanwhile
                    delete_pending(self.root.store, self.name)
            else:
                self.group.attrs[dm.ATTR_COMPLETE] = True
            if self.shard is not None:
                drop_digests(self.root.store, self.name, range(n_blocks))
            # the shards' encodings (a suite laid out by shard workers, perhaps finished by a
            # run without --shard)
            self.drop_tokens()
        if self.shard is not None:
            # writes that killed shard workers left unfinished: every block is done, nobody
            # writes one now (kept encodings aside while another worker runs: the worker that
            # lays the suite out writes them while it computes, and may still be at it)
            self.drop_partial_files()
        self._consolidate_complete()
        self.close()

    def refresh_consolidated(self) -> bool:
        """Refresh the root's consolidated metadata of a complete suite where it disagrees with
        the store (the last step of a run failed, or the copy was edited); True when it did.
        Nothing is written when it agrees.

        Raises
        ------
        StoreError
            It disagrees and cannot be rewritten (a full or read-only disk).
        """
        if not stale_consolidated(self.root.store):
            return False
        self._consolidate_complete()
        return True

    def _consolidate_complete(self) -> None:
        """:func:`consolidate` once the suite is complete: a failure says what is true."""
        try:
            consolidate(self.root, self.location)
        except OSError as err:
            raise StoreError(
                f"suite {self.name!r} in {self.location} is complete (its vectors and manifest "
                f"are written; emb reads it as it is), but the consolidated metadata that plain "
                f"xarray's open_zarr reads first could not be refreshed: {err.strerror or err}; "
                "free some space (or make the store writable) and re-run the same command, which "
                "then only refreshes it (until then, plain xarray reads the suite with "
                "open_zarr(..., consolidated=False))"
            ) from err

    def close(self) -> None:
        """Release the suite's lock (idempotent); an unfinished suite stays resumable."""
        if self.lock is not None:
            self.lock.release()

    def drop_partial_files(self) -> None:
        """Remove the temporary files killed writes left in a complete suite (``*.partial``):
        all of them once no other worker of the suite holds its lock (a live one may be writing
        kept encodings), else all but the kept encodings'."""
        mine = shard_lock_path(self.location, self.name, self.shard) if self.shard else None
        keep = None
        if not is_url(self.location):
            base = local_path(self.location)
            try:
                for path in sorted(base.glob(f"{dm.LOCK_PREFIX}.{self.name}.shard-*")):
                    if path != mine:
                        WriterLock.check_free(path, what=f"suite {self.name!r} ({path.name})")
            except StoreLockedError:
                keep = f"{self.name}/{dm.PROGRESS_GROUP}/{TOKENS_PREFIX}"
        self._drop_partial_files(keep=keep)

    def _drop_partial_files(self, keep: str | None = None) -> None:
        """Remove temporary files left by writes a kill interrupted (``*.partial``), but for
        those whose key starts with ``keep``."""
        if is_url(self.location):
            return
        for key in list_prefix(self.root.store, self.name):
            if key.endswith(".partial") and not (keep and key.startswith(keep)):
                with contextlib.suppress(OSError):
                    (local_path(self.location) / key).unlink()


def consolidate(root: zarr.Group, location: str | None = None) -> None:
    """Refresh the root's consolidated metadata so plain ``xr.open_zarr(path, group=...)`` opens
    groups in one read without warnings.  emb itself never trusts it (it reads with
    ``consolidated=False``), so a copy made stale by an interrupted run is harmless.  Done under
    the root's lock: the last writer to consolidate has seen every group's latest metadata."""
    lock = (
        locked(location, None, purpose="refresh the consolidated metadata", wait_s=ROOT_LOCK_WAIT_S)
        if location is not None
        else contextlib.nullcontext()
    )
    with lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consolidated metadata", category=UserWarning)
        # lock files and temporary files at the root are not zarr nodes
        warnings.filterwarnings("ignore", message="Object at .* is not recognized", category=UserWarning)
        warnings.simplefilter("ignore", zarr.errors.UnstableSpecificationWarning)
        zarr.consolidate_metadata(root.store, zarr_format=3)
