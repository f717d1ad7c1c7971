"""The store's write protocol behind one handle: :class:`StoreWriter`, through which ``emb extract``
writes, as zarr's ``Store`` hides how bytes reach a disk or a bucket.

A run uses it in this order, which the crash safety of :mod:`emb.store.suite_writer` rests on:

1. Reading only, before anything is written: :meth:`~StoreWriter.check` (a location emb must not
   write into, a suite another process writes, a store of another model) and
   :meth:`~StoreWriter.check_suites` (a group this run could not resume or must not replace);
   :meth:`~StoreWriter.stored_plans` (what a resumed suite was started with, for a sharded run's
   count).  A dry run stops here: nothing has been created.
2. :meth:`~StoreWriter.open`: the store's root created, or its model checked, under the root lock.
3. Per suite, :meth:`~StoreWriter.open_suite` returns a :class:`~emb.store.suite_writer.SuiteWriter`
   holding the suite's lock: the layout (or the one resumed), then per block
   :meth:`~emb.store.suite_writer.SuiteWriter.write_block` (the shard, then its marker), then
   :meth:`~emb.store.suite_writer.SuiteWriter.finish` (manifest, ``complete``, the root's consolidated
   metadata); a shard writer's record (:meth:`~emb.store.suite_writer.SuiteWriter.record_shards`).
   Vectors another finished suite stored with the same settings are found with
   :meth:`~StoreWriter.reusable_rows` and read with :meth:`~StoreWriter.read_rows`.

Callers import ``emb.store`` only; the modules behind it (locks, shard records, group checks,
layout) stay the store's own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import zarr

from emb.errors import RemoteStoreError, StoreError
from emb.schemas import datamodel as dm
from emb.store import suite_writer as _writer
from emb.store._compat import text
from emb.store._layout import read_rows
from emb.store._location import is_url, local_path, open_zarr_store
from emb.store._write_checks import (
    check_group,
    check_store,
    extraction_differences,
    open_for_writing,
)
from emb.store.lock import WriterLock
from emb.store.shards import ShardRecord, read_record, recorded_tokens, shard_lock_path
from emb.store.store import suite_names
from emb.store.suite_writer import SuiteWriter

__all__ = ["RowKey", "StoreWriter"]

#: A stored row's key: (context, char_start, char_end) of its item.
RowKey = tuple[str, int, int]


class StoreWriter:
    """An emb store opened for writing (see the module's docstring for the order of its calls).

    Made from its location alone: nothing is read or written until a method is called.

    Parameters
    ----------
    location
        Local path or fsspec URL of the (new or existing) store.
    storage_options
        fsspec options for a URL.
    """

    def __init__(
        self, location: str | os.PathLike[str], *, storage_options: dict[str, Any] | None = None
    ) -> None:
        self.location = os.fspath(location)
        self.storage_options = storage_options
        self._root: zarr.Group | None = None
        self._model: dict[str, Any] | None = None  # the run's model attributes, once open

    # -- reading only, before anything is written ---------------------------------------------------
    def check(
        self,
        *,
        model: Mapping[str, Any] | None = None,
        suites: Sequence[str] = (),
        shard: str | None = None,
    ) -> None:
        """Refuse, reading only, a location emb must not write into: a file or a path under one,
        a read-only directory, a zip, someone else's zarr store or files, a damaged emb store;
        with ``model``, a store of another model; with ``suites``, a suite another process is
        writing (with ``shard``, ``"shard-I-of-N"``: a worker already writing that shard of it).

        Raises
        ------
        StoreError, StoreMismatchError, CorruptStoreError, StoreLockedError
        """
        check_store(
            self.location, model=model, storage_options=self.storage_options,
            suites=suites if shard is None else (),
        )
        if shard is None:
            return
        for name in suites:
            path = shard_lock_path(self.location, name, shard)
            if path is not None:
                WriterLock.check_free(path, what=f"{shard} of suite {name!r} of store {self.location}")

    def check_suites(
        self,
        suites: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
        *,
        overwrite: bool,
        shard: str | None = None,
    ) -> list[tuple[str, dict[str, Any] | None]]:
        """Refuse, reading only, a group this run could not resume or must not replace; per
        group, what writing it will do as seen now (see :func:`emb.store._write_checks.plan_group`:
        ``"new"``, ``"resume"`` with the group's attributes, ``"rewrite"``, ``"replace"``, or
        ``"unknown"``), which :meth:`open_suite` decides again under the suite's lock.

        ``suites``: each group's name, suite attributes and extraction attributes (the identity
        settings are compared); ``shard``: this run writes that shard (``"shard-I-of-N"``) beside
        other workers.

        Raises
        ------
        StoreMismatchError, CorruptStoreError, StoreLockedError
            See :func:`emb.store._write_checks.check_group`.
        """
        suites = list(suites)
        if not is_url(self.location) and not local_path(self.location).is_dir():
            return [("new", None) for _ in suites]
        try:
            zstore = open_zarr_store(self.location, mode="r", storage_options=self.storage_options)
        except StoreError:
            return [("new", None) for _ in suites]  # nothing there yet
        return [
            check_group(
                self.location, zstore, name=name, suite_attrs=suite_attrs,
                extraction=extraction, overwrite=overwrite, shard=shard,
            )
            for name, suite_attrs, extraction in suites
        ]

    def stored_plans(self, names: Sequence[str]) -> list[tuple[Any, int | None]]:
        """Per suite, reading only: the extraction attributes it is stored with (None: no
        group, or one that cannot be read) and the shard count of its record (None: none)."""
        return [(stored, record.count if record is not None else None)
                for stored, record in self._stored(names)]

    def stored_record(self, name: str) -> ShardRecord | None:
        """Suite ``name``'s shard record, reading only (None: none, or no store yet)."""
        return self._stored([name])[0][1]

    def recorded_tokens(self, name: str, label: str) -> bytes | None:
        """The encodings kept for shard ``label`` of suite ``name`` by the worker that laid it
        out (:func:`emb.store.shards.record_tokens`), reading only; None: none (yet)."""
        try:
            zstore = open_zarr_store(self.location, mode="r", storage_options=self.storage_options)
        except StoreError:
            return None
        return recorded_tokens(zstore, name, label)

    def _stored(self, names: Sequence[str]) -> list[tuple[Any, ShardRecord | None]]:
        zstore = None
        if is_url(self.location) or local_path(self.location).is_dir():
            with contextlib.suppress(StoreError):
                zstore = open_zarr_store(self.location, mode="r", storage_options=self.storage_options)
        plans: list[tuple[Any, ShardRecord | None]] = []  # stored attributes, record
        for name in names:
            stored, recorded = None, None
            if zstore is not None:
                recorded = read_record(zstore, name)
                with contextlib.suppress(StoreError, KeyError, ValueError, TypeError, OSError):
                    stored = zarr.open_group(zstore, path=name, mode="r", zarr_format=3,
                                             use_consolidated=False).attrs.get(dm.ATTR_EXTRACTION)
            plans.append((stored, recorded))
        return plans

    @staticmethod
    def default_block_size(shape: tuple[int, int, int, int], storage_dtype: str) -> int:
        """Items per shard of a new suite of ``shape`` (items, layers, poolings, features):
        the rule :meth:`SuiteWriter.open` applies, looked up when called."""
        _, n_layers, n_poolings, n_features = shape
        return _writer.block_size_for(n_layers, n_poolings, n_features, np.dtype(storage_dtype).itemsize)

    # -- writing ------------------------------------------------------------------------------------
    def open(self, *, model: Mapping[str, Any]) -> None:
        """Open (or create) the store for ``model``, under the root lock; refuse one written by
        another model, someone else's zarr store or files, and a location emb cannot write into.

        Raises
        ------
        StoreError, StoreMismatchError, CorruptStoreError, StoreLockedError
        """
        _, self._root = open_for_writing(self.location, model=model, storage_options=self.storage_options)
        self._model = dict(model)  # the run's: a group records how this run placed the weights

    def _opened(self) -> zarr.Group:
        """The store's root group, once :meth:`open`."""
        if self._root is None:
            raise StoreError(f"{self.location} is not open for writing: call open(model=...) first")
        return self._root

    def open_suite(self, name: str, **layout: Any) -> SuiteWriter:
        """The writer of suite ``name``, holding its lock: its layout written (by ``executor``,
        the writer thread, where given) or the unfinished one resumed.

        ``layout``: the keywords of :meth:`SuiteWriter.open`, declared there alone (``coords``,
        ``shape``, ``storage_dtype``, ``suite_attrs``, ``extraction_attrs``, ``overwrite``,
        ``block_size``, ``executor``, ``shard``, ``identity``; ``scanned``: the group's
        attributes :meth:`check_suites` returned with ``"resume"``); the store's location, its
        root and the run's model attributes are this handle's.
        """
        return SuiteWriter.open(self.location, self._opened(), name=name, run_model=self._model,
                                **layout)

    # -- rows stored by other suites ----------------------------------------------------------------
    def reusable_rows(
        self, name: str, extraction: Mapping[str, Any], *, only: Sequence[str] | None = None,
        wanted: Iterable[RowKey] | None = None,
    ) -> tuple[dict[RowKey, tuple[str, int]], tuple[str, ...]]:
        """Keys already stored by other finished suites with the same extraction settings (each
        key's first (suite, row)), and the names of those suites.  ``only``: the suites a
        sharded extraction's record names (every shard copies from the same ones, whatever
        finished since).  ``wanted``: only these keys are looked for (the suite's own: a small
        suite beside a corpus suite of millions of items then holds its few keys, not every
        row of the corpus); the rows are matched by context in one hashed pass.

        Raises
        ------
        StoreError
            (``only``) One of those suites is no longer complete.
        """
        root = self._opened()
        sources: dict[RowKey, tuple[str, int]] = {}
        used: list[str] = []
        keys: set[RowKey] | None = None
        contexts_wanted = None
        for other in suite_names(root.store) if only is None else only:
            if other == name:
                continue
            try:
                node = zarr.open_group(root.store, path=other, mode="r", use_consolidated=False)
                if not node.attrs.get(dm.ATTR_COMPLETE) or dm.ATTR_EXTRACTION not in node.attrs:
                    raise KeyError(other)
                if extraction_differences(node.attrs[dm.ATTR_EXTRACTION], extraction):
                    raise KeyError(other)
                contexts = text(node["context"][:])
                starts = np.asarray(node["char_start"][:])
                ends = np.asarray(node["char_end"][:])
            except RemoteStoreError:  # the server, not a damaged suite
                raise
            except (KeyError, ValueError, TypeError, OSError):
                if only is None:
                    continue  # a damaged suite is no source ('emb validate' reports it)
                raise StoreError(
                    f"suite {other!r}, whose vectors the shards of {name!r} copy, is no longer "
                    f"complete in {root.store}; re-extract {name!r} with --overwrite"
                ) from None
            used.append(other)
            if wanted is not None and keys is None:  # made once, and only where a suite can give
                keys = set(wanted)  # rows (a store of one suite: never; 1.7 us an item)
                contexts_wanted = pd.Index(list({k[0] for k in keys}), dtype=object)
            if contexts_wanted is None:
                rows = range(len(contexts))
            else:  # the rows whose context is wanted (hashed in C), then their spans
                rows = np.flatnonzero(contexts_wanted.get_indexer(contexts) >= 0).tolist()
            for row in rows:
                key = (str(contexts[row]), int(starts[row]), int(ends[row]))
                if keys is None or key in keys:
                    sources.setdefault(key, (other, row))
        return sources, tuple(used)

    def read_rows(self, suite: str, rows: Sequence[int]) -> np.ndarray:
        """Rows of another suite's stored embedding, in the order asked for."""
        return read_rows(self._opened()[f"{suite}/{dm.EMBEDDING}"], rows)
