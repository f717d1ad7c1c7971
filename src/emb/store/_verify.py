"""Reading a complete suite and trusting what is read: checksums on every read, and one version.

Two promises of :meth:`emb.store.Store.dataset`, kept here:

**Damaged bytes never become numbers.**  Zarr checks nothing in a Blosc chunk: three flipped bits
in a shard's compressed payload decode to other vectors without an error.  What is verified, and
how, depends on what the store holds:

- *store schema 3*: every inner chunk of ``embedding`` ends with its CRC-32C (zarr's ``crc32c``
  codec, see :func:`emb.store._layout.chunk_codecs`), which zarr checks on exactly the bytes it
  reads, one inner chunk by byte range (a layer of a block), so a remote read stays as small as
  before.  The shard index has zarr's own CRC-32C.  A failing chunk is found and named by
  :class:`CheckedArray`.
- *every object the manifest lists that has no checksum of its own* (coordinates, array
  metadata, and the shards of stores written before schema 3): the first read of the object
  reads it whole and compares its CRC-32 with the manifest's; later reads of it pass through.
  For an old store's shard that is one extra read of the whole shard (all layers) the first time
  any part of it is read: what old stores cost, measured by ``benchmarks/integrity.py``.
- *every object the manifest lists* must exist: a missing shard would read as NaN.

Why not the manifest for every shard, also in schema 3: it can vouch only for whole objects, and
an analysis reads one layer of a shard; reading whole shards would multiply a one-layer read by
the number of layers (a 13-layer model: 13 times the bytes, and over HTTP 13 times the time).

**One version of a suite.**  ``emb extract --overwrite`` may rewrite a suite while an analysis
reads it.  A :class:`SuiteReads` records, when the Dataset is opened, the suite's identity: its
group metadata (with the layout's ``generation`` id, schema 3, or its ``created`` time before)
and its manifest.  :func:`check_unchanged` reads it again after the computation: another
identity means the reads may mix old and new blocks, and the result is refused.  A verification
that fails on the way checks the identity first, so a rewrite is reported as a rewrite, not as
damage.  This holds on object stores too (no lock is needed); a local reader takes no lock, so
a read-only copy of a store stays readable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import google_crc32c
import numpy as np
import xarray as xr
import zarr
from xarray.backends import BackendArray
from xarray.core import indexing

from emb.errors import CorruptStoreError, EmbError, StoreError
from emb.schemas import datamodel as dm
from emb.store._nodes import (
    _ZIP_DAMAGE,
    BadMetadata,
    crc32,
    damage_text,
    is_damage,
    read_bytes,
    read_json,
)
from emb.store._zarr import (
    Buffer,
    BufferPrototype,
    ByteRequest,
    ReadWrapper,
    prototype,
    slice_buffer,
    sync,
)
from emb.store.manifest import MANIFEST_VERSION, describe_key
from emb.store.validate import shard_key

__all__ = [
    "CheckedArray",
    "SuiteReads",
    "VerifiedStore",
    "check_unchanged",
    "suite_reads",
    "verified_store",
]

#: the key of a Dataset's ``encoding`` holding its :class:`SuiteReads`
READS_KEY = "emb_reads"
#: objects at least this large are checksummed off zarr's event loop
_THREAD_BYTES = 1 << 20


@dataclass(frozen=True)
class Identity:
    """What a suite is at one moment: its layout's id, completion, and a digest of its group and
    manifest metadata (any rewrite changes it)."""

    exists: bool
    generation: str | None
    created: str | None
    complete: bool
    digest: str


def _identity(group_raw: bytes | None, progress_raw: bytes | None) -> Identity:
    attrs: dict[str, Any] = {}
    if group_raw is not None:
        try:
            doc = json.loads(group_raw)
            attrs = doc.get("attributes") or {} if isinstance(doc, dict) else {}
        except ValueError:
            attrs = {}
        if not isinstance(attrs, dict):
            attrs = {}
    sha = hashlib.sha256()
    for raw in (group_raw, progress_raw):
        sha.update(b"-" if raw is None else len(raw).to_bytes(8, "little") + raw)
    generation = attrs.get(dm.ATTR_GENERATION)
    created = attrs.get(dm.ATTR_CREATED)
    return Identity(
        exists=group_raw is not None,
        generation=str(generation) if generation is not None else None,
        created=str(created) if created is not None else None,
        complete=attrs.get(dm.ATTR_COMPLETE) is True,
        digest=sha.hexdigest(),
    )


async def _read_identity(zstore: Any, name: str) -> Identity:
    buffers = prototype()

    async def raw(key: str) -> bytes | None:
        try:
            buffer = await zstore.get(key, buffers)
        except (FileNotFoundError, KeyError, NotADirectoryError, *_ZIP_DAMAGE):
            return None
        return None if buffer is None else buffer.to_bytes()

    group, progress = await asyncio.gather(
        raw(f"{name}/zarr.json"), raw(f"{name}/{dm.PROGRESS_GROUP}/zarr.json")
    )
    return _identity(group, progress)


class SuiteReads:
    """One opened suite: where it is, and its identity when it was opened (see the module)."""

    def __init__(self, location: str, zstore: Any, name: str, identity: Identity) -> None:
        self.location = location
        self.zstore = zstore
        self.name = name
        self.identity = identity

    def _change(self, now: Identity) -> str | None:
        was = self.identity
        if now == was:
            return None
        if not now.exists:
            return "it was deleted (or is being rewritten) since"
        if now.generation != was.generation and now.generation and was.generation:
            state = "" if now.complete else ", and the new one is not complete yet"
            return (f"it was rewritten since (generation {was.generation[:8]}… is now "
                    f"{now.generation[:8]}…{state})")
        if was.complete and not now.complete:
            return "it is being rewritten (it is no longer marked complete)"
        if now.created != was.created:
            return f"it was rewritten since (created {was.created}, now {now.created})"
        return "its metadata or manifest changed since"

    def error(self, change: str) -> StoreError:
        """The refusal for a suite that changed while it was read."""
        return StoreError(
            f"suite {self.name!r} in {self.location} changed while it was read: {change}; what was "
            "read may mix its old and new vectors, so the results computed from it are refused "
            "(nothing is written); run the analysis again once the 'emb extract' writing it has "
            "finished"
        )

    def changed(self) -> str | None:
        """How the suite changed since it was opened (None: it did not); reads two objects."""
        return self._change(sync(_read_identity(self.zstore, self.name)))

    async def changed_async(self) -> str | None:
        """:meth:`changed`, on zarr's event loop (from inside a store read)."""
        return self._change(await _read_identity(self.zstore, self.name))

    def check(self) -> None:
        """Raise when the suite changed since it was opened.

        Raises
        ------
        StoreError
            It was rewritten, is being rewritten, or was deleted.
        """
        if (change := self.changed()) is not None:
            raise self.error(change)

    def damaged(self, what: str, *, cause: BaseException | None = None) -> CorruptStoreError:
        """The error for damaged stored bytes (``what``: the object and what is wrong with it)."""
        because = f" ({damage_text(cause)})" if cause else ""
        return CorruptStoreError(
            f"the stored data of suite {self.name!r} in {self.location} is damaged: {what}{because}; "
            f"nothing was computed from it; run 'emb validate --deep {self.location}' for the "
            "whole report, and restore the store from a copy or re-extract the suite with "
            "--overwrite"
        )


class VerifiedStore(ReadWrapper):
    """A read-only view of a store that verifies every object a suite's manifest lists: each
    must exist, and one without a checksum of its own (``chunk_checked`` are those with one) is
    compared with the manifest's size and CRC-32 when it is first read (see the module)."""

    def __init__(
        self,
        store: Any,
        *,
        listed: Mapping[str, tuple[int, str]] | None = None,
        chunk_checked: frozenset[str] = frozenset(),
        reads: SuiteReads,
        block: int = 0,
        n_items: int = 0,
    ) -> None:
        super().__init__(store)
        self._listed = dict(listed or {})
        self._chunk_checked = chunk_checked
        self._reads = reads
        self._block = block
        self._n_items = n_items
        self._verified: set[str] = set()
        self._pending: dict[str, asyncio.Future[Buffer]] = {}

    def rewrapped(self, store: Any) -> VerifiedStore:
        return VerifiedStore(
            store, listed=self._listed, chunk_checked=self._chunk_checked, reads=self._reads,
            block=self._block, n_items=self._n_items,
        )

    def __getstate__(self) -> dict[str, Any]:  # a dask worker verifies again, on its own
        state = dict(self.__dict__)
        state["_pending"] = {}
        return state

    def _describe(self, key: str) -> str:
        """An object in words, with its key: 'the embedding shard of block 3 (items …) at …'."""
        rel = key.removeprefix(f"{self._reads.name}/")
        return f"{describe_key(rel, self._block, self._n_items)} at {key}"

    async def _fail(self, key: str, what: str, cause: BaseException | None = None) -> EmbError:
        if (change := await self._reads.changed_async()) is not None:
            return self._reads.error(change)
        return self._reads.damaged(f"{self._describe(key)} {what}", cause=cause)

    async def _inner_get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        try:
            return await self.inner.get(key, prototype, byte_range)
        except _ZIP_DAMAGE as err:
            raise await self._fail(key, "cannot be read back", err) from err

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        entry = self._listed.get(key)
        if entry is None:
            return await self._inner_get(key, prototype, byte_range)
        if key in self._chunk_checked or key in self._verified:
            buffer = await self._inner_get(key, prototype, byte_range)
            if buffer is None:
                raise await self._fail(key, "is missing, though the suite's manifest lists it")
            return buffer
        whole = await self._whole(key, prototype, entry)
        return slice_buffer(whole, byte_range)

    async def _whole(self, key: str, prototype: BufferPrototype, entry: tuple[int, str]) -> Buffer:
        """The object read whole and checked against the manifest, once however many tasks ask."""
        if (pending := self._pending.get(key)) is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Buffer] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            whole = await self._check_whole(key, prototype, entry)
        except BaseException as err:
            future.set_exception(err)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            del self._pending[key]
            raise
        self._verified.add(key)
        future.set_result(whole)
        del self._pending[key]
        return whole

    async def _check_whole(
        self, key: str, prototype: BufferPrototype, entry: tuple[int, str]
    ) -> Buffer:
        whole = await self._inner_get(key, prototype)
        if whole is None:
            raise await self._fail(key, "is missing, though the suite's manifest lists it")
        size, want = int(entry[0]), str(entry[1])
        if len(whole) != size:
            raise await self._fail(key, f"has {len(whole)} bytes, the manifest {size} "
                                        "(truncated or rewritten)")
        data = whole.as_numpy_array()
        got = await asyncio.to_thread(crc32, data) if len(data) >= _THREAD_BYTES else crc32(data)
        if got != want:
            raise await self._fail(key, f"has other bytes than when the suite was completed "
                                        f"(crc32 {got}, manifest {want})")
        return whole

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def set(self, key: str, value: Buffer) -> None:
        raise StoreError(f"a suite opened for reading is not written ({key})")


class CheckedArray(BackendArray):
    """The suite's ``embedding`` for xarray: reads through zarr, and a read that fails on damaged
    bytes (a chunk's CRC-32C, a shard index, a zip member) is a CorruptStoreError naming the
    shard and layer, found by reading the blocks of the failed read one at a time."""

    def __init__(self, array: zarr.Array, reads: SuiteReads, *, block: int) -> None:
        self.array = array
        self.reads = reads
        self.block = block
        self.shape = array.shape
        self.dtype = np.dtype(array.dtype)

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )

    def _read(self, key: tuple[Any, ...]) -> np.ndarray:
        try:
            return np.asarray(self.array.oindex[key])
        except EmbError:
            raise
        except Exception as err:
            if not is_damage(err):
                raise
            if (change := self.reads.changed()) is not None:
                raise self.reads.error(change) from err
            raise self.reads.damaged(self._culprit(key), cause=err) from err

    def _culprit(self, key: tuple[Any, ...]) -> str:
        """Which block of a failed read does not decode, in words (blocks read one by one)."""
        rows = np.arange(self.shape[0])[key[0]]
        rest = key[1:]
        layers = np.arange(self.shape[1])[rest[0]] if rest else np.arange(self.shape[1])
        shown = _layers(np.atleast_1d(layers), self.shape[1])
        n = self.shape[0]
        for b in sorted({int(r) // self.block for r in np.atleast_1d(rows)}):
            try:
                self.array.oindex[(slice(b * self.block, min(n, (b + 1) * self.block)), *rest)]
            except Exception as err:  # noqa: BLE001 - the one that fails is the one named
                if is_damage(err):
                    key_b = shard_key(self.reads.name, self.array, b)
                    what = describe_key(key_b.removeprefix(f"{self.reads.name}/"), self.block, n)
                    if not self._index_intact(key_b):
                        return f"the index of {what} at {key_b} does not decode"
                    return f"{what} at {key_b}, {shown}, does not decode"
        return f"a read of the embedding (items {_rows(rows)}, {shown}) does not decode"

    def _index_intact(self, key: str) -> bool:
        """Whether a shard's index (at its end: offset and size of each inner chunk, then its
        CRC-32C) matches its checksum; True when that cannot be told."""
        try:
            raw = read_bytes(self.reads.zstore, key)
            chunks = 1
            for whole, inner in zip(self.array.shards or (), self.array.chunks, strict=True):
                chunks *= whole // inner
        except Exception:  # noqa: BLE001 - an error path: the caller names the shard anyway
            return True
        size = 16 * chunks + 4
        if raw is None or len(raw) < size:
            return raw is None
        index = raw[-size:]
        return google_crc32c.value(index[:-4]) == int.from_bytes(index[-4:], "little")


def _layers(layers: np.ndarray, n_layers: int) -> str:
    if layers.size == n_layers:
        return "all layers"
    shown = ", ".join(str(int(v)) for v in layers[:8]) + ("…" if layers.size > 8 else "")
    return f"layer{'s' if layers.size > 1 else ''} {shown}"


def _rows(rows: np.ndarray) -> str:
    rows = np.atleast_1d(rows)
    return f"{int(rows.min())}–{int(rows.max())}" if rows.size else "none"


def suite_reads(zstore: Any, location: str, name: str) -> SuiteReads:
    """The suite's :class:`SuiteReads`: its identity now (read before anything else of it)."""
    return SuiteReads(location, zstore, name, sync(_read_identity(zstore, name)))


def verified_store(reads: SuiteReads, *, verify: bool = True) -> Any:
    """The store to read the suite through: a :class:`VerifiedStore` when it has a manifest
    (and ``verify``), else the store itself.  Call it once the suite was validated (a plain
    check: the manifest's form and the objects' sizes).

    Raises
    ------
    CorruptStoreError
        The embedding's metadata differs from the manifest's record of it.
    """
    zstore, name = reads.zstore, reads.name
    manifest = _manifest_of(zstore, name)
    objects = (manifest or {}).get("objects")
    if not verify or not isinstance(objects, Mapping) or manifest.get("version") != MANIFEST_VERSION:
        return zstore
    listed: dict[str, tuple[int, str]] = {}
    for rel, entry in objects.items():
        if (isinstance(entry, list | tuple) and len(entry) == 2 and isinstance(entry[0], int)
                and isinstance(entry[1], str)):
            listed[f"{name}/{rel}"] = (int(entry[0]), entry[1])
    block = _whole_number(manifest.get("block_size"))
    n_items = _whole_number(manifest.get("n_items"))
    prefix = f"{name}/{dm.EMBEDDING}/c/"
    checked = frozenset(k for k in listed if k.startswith(prefix)) if _chunks_checked(
        zstore, name, listed, reads) else frozenset()
    return VerifiedStore(zstore, listed=listed, chunk_checked=checked, reads=reads, block=block,
                         n_items=n_items)


def _whole_number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _manifest_of(zstore: Any, name: str) -> dict[str, Any] | None:
    try:
        meta = read_json(zstore, f"{name}/{dm.PROGRESS_GROUP}/zarr.json")
    except BadMetadata:
        return None
    attrs = (meta or {}).get("attributes")
    manifest = attrs.get(dm.ATTR_MANIFEST) if isinstance(attrs, dict) else None
    return manifest if isinstance(manifest, dict) else None


def _chunks_checked(
    zstore: Any, name: str, listed: Mapping[str, tuple[int, str]], reads: SuiteReads
) -> bool:
    """Whether the embedding's inner chunks carry a CRC-32C (store schema 3), read from its
    metadata after checking that metadata against the manifest."""
    key = f"{name}/{dm.EMBEDDING}/zarr.json"
    raw = read_bytes(zstore, key)
    entry = listed.get(key)
    if raw is None or entry is None:
        return False
    if len(raw) != int(entry[0]) or crc32(raw) != entry[1]:
        if (change := reads.changed()) is not None:
            raise reads.error(change)
        raise reads.damaged(f"the metadata of embedding ({key}) has other bytes than when the "
                            f"suite was completed (crc32 {crc32(raw)}, manifest {entry[1]})")
    return has_chunk_checksums(json.loads(raw))


def has_chunk_checksums(meta: Mapping[str, Any]) -> bool:
    """Whether an array's metadata puts a ``crc32c`` codec into its (sharded) chunks' chain."""
    for codec in meta.get("codecs") or ():
        if not isinstance(codec, Mapping):
            continue
        if codec.get("name") == "sharding_indexed":
            inner = (codec.get("configuration") or {}).get("codecs") or ()
            return any(isinstance(c, Mapping) and c.get("name") == "crc32c" for c in inner)
    return False


def checked_variable(
    variable: xr.Variable, array: zarr.Array, reads: SuiteReads, *, block: int
) -> xr.Variable:
    """``variable`` (the embedding as xarray opened it) reading through :class:`CheckedArray`."""
    data = indexing.LazilyIndexedArray(CheckedArray(array, reads, block=block))
    return xr.Variable(variable.dims, data, variable.attrs, variable.encoding, fastpath=True)


def check_unchanged(datasets: Iterable[xr.Dataset]) -> None:
    """Refuse results computed from a suite that changed while it was read.

    Call it after computing from Datasets of :meth:`emb.store.Store.dataset` (``emb analyze``
    does): each suite's group metadata and manifest are read again and compared with what they
    were when the Dataset was opened.

    Raises
    ------
    StoreError
        A suite was rewritten (``emb extract --overwrite``), is being rewritten, or was deleted
        since its Dataset was opened.
    """
    seen: set[int] = set()
    for ds in datasets:
        reads = ds.encoding.get(READS_KEY)
        if isinstance(reads, SuiteReads) and id(reads) not in seen:
            seen.add(id(reads))
            reads.check()
