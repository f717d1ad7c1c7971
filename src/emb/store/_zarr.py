"""zarr behind one door: every use of zarr's internals by emb's store, and nothing else.

emb reaches under zarr's public API (``zarr.open_group``, ``zarr.create_array``,
``zarr.storage.LocalStore`` …) where it must: to run a coroutine on zarr's event loop, to hand
bytes to a store as zarr's ``Buffer``, to frame a shard itself with the array's own codecs
(:mod:`emb.store._shard_bytes`), to open an array from a metadata document already read, to
open a zip store from a file object, and to verify reads inside a wrapping store.  Those uses
sit here, under names of emb's, and the other store modules import them from here only (a test,
``tests/test_imports.py``, keeps it so).  zarr is floored, not capped: a zarr release that
changes what is used here fails the tests of this module (``tests/store/test_zarr_adapter.py``),
which also pin the shards framed here to the bytes zarr's own writer writes.
"""

from __future__ import annotations

import asyncio
import threading
import zipfile
from collections.abc import AsyncGenerator, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, TypeVar

import numpy as np
import zarr
import zarr.core.sync as _zarr_sync
import zarr.storage
from zarr.abc.codec import BytesBytesCodec
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, ShardingCodec
from zarr.codecs.sharding import ShardingCodecIndexLocation
from zarr.core.array import AsyncArray
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.core.indexing import morton_order_iter
from zarr.core.sync import loop as _loop
from zarr.core.sync import sync as _sync
from zarr.storage._common import make_store_path

__all__ = [
    "CODEC_CODE",
    "STORAGE_CODE",
    "Buffer",
    "BufferPrototype",
    "ByteRequest",
    "Codec",
    "ReadWrapper",
    "ShardChain",
    "ZipFileStore",
    "arrays_from_metadata",
    "as_buffer",
    "blosc_codec",
    "chunk_key",
    "crc32c_codec",
    "dimension_names",
    "io_loop",
    "is_open",
    "only_bytes_codec",
    "opened",
    "prototype",
    "shard_chain",
    "slice_buffer",
    "sync",
    "zip_member_sizes",
]

_T = TypeVar("_T")

#: A bytes-to-bytes codec of zarr's (Blosc, CRC-32C): what an array's ``compressors`` are.
Codec = BytesBytesCodec

#: Where zarr's codecs and stores lie, as a traceback's file names show them: an error raised
#: in a codec means the stored bytes do not decode; an OSError raised in a store, a failed read
#: (:func:`emb.store._nodes.is_damage`, :func:`emb.store._nodes.damage_reported`).
CODEC_CODE: str = r"zarr[/\\]codecs"
STORAGE_CODE: str = r"zarr[/\\]storage"


# -- zarr's event loop ------------------------------------------------------------------------------
#: The tasks on zarr's event loop that are not done yet. asyncio holds a loop's tasks weakly: a
#: request still pending when a run fails (the other reads of a batch whose server died) would be
#: left to the garbage collector, which destroys it outside its own context whenever it runs
#: (aiobotocore's context reset then prints "Exception ignored in: <coroutine …>" after emb's
#: one-line error). Held here until done, they are cancelled on their own loop by the CLI's
#: settling (:func:`emb.cli._errors._settle_store_io`) instead.
_PENDING: set[asyncio.Future[Any]] = set()


def _keeping_task(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    """zarr's loop's task factory: asyncio's own task, kept in :data:`_PENDING` until done."""
    task = asyncio.Task(coro, loop=loop, **kwargs)
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)
    return task


def _get_loop() -> asyncio.AbstractEventLoop:
    """zarr's ``_get_loop`` (which starts its loop on first use), with the loop's tasks kept."""
    loop = _zarr_get_loop()
    if loop.get_task_factory() is None:
        loop.set_task_factory(_keeping_task)
    return loop


_zarr_get_loop = _zarr_sync._get_loop
_zarr_sync._get_loop = _get_loop  # zarr's sync() looks its loop up here: every task is kept


def sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` on zarr's event loop (its I/O thread) and return its result: how zarr's
    synchronous API runs its own coroutines, and the loop every store's coroutines expect."""
    return _sync(coro)


def io_loop() -> asyncio.AbstractEventLoop | None:
    """zarr's event loop, or None when nothing has started it yet."""
    return _loop[0]


# -- buffers and byte ranges ------------------------------------------------------------------------
def prototype() -> BufferPrototype:
    """zarr's default buffer prototype (CPU buffers), which a store's ``get`` takes."""
    return default_buffer_prototype()


def as_buffer(data: Any) -> Buffer:
    """``data`` (bytes or any buffer) as the ``Buffer`` a store's ``set`` takes."""
    return default_buffer_prototype().buffer.from_bytes(data)


def slice_buffer(whole: Buffer, byte_range: ByteRequest | None) -> Buffer:
    """The part of an object's bytes ``whole`` that the byte request ``byte_range`` asks for
    (all of it for None), as a store's ``get`` answers it."""
    n = len(whole)
    if byte_range is None:
        return whole
    if isinstance(byte_range, RangeByteRequest):
        return whole[byte_range.start : min(byte_range.end, n)]
    if isinstance(byte_range, OffsetByteRequest):
        return whole[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return whole[max(0, n - byte_range.suffix) :]
    raise TypeError(f"unknown byte request {byte_range!r}")


# -- codecs -----------------------------------------------------------------------------------------
def blosc_codec(*, cname: str, clevel: int, shuffle: str) -> Codec:
    """zarr's ``blosc`` bytes-to-bytes codec, every parameter fixed but the type size (zarr
    sets it to the array's item size)."""
    return BloscCodec(cname=cname, clevel=clevel, shuffle=shuffle)  # type: ignore[arg-type]


def crc32c_codec() -> Codec:
    """zarr's ``crc32c`` codec: the CRC-32C of the bytes appended, checked on every read."""
    return Crc32cCodec()


@dataclass(frozen=True)
class ShardChain:
    """What framing a shard of a sharded array takes, read from its codecs: the shard and
    inner chunk shapes, the values' dtype in the byte order of the ``bytes`` codec, the fill
    value, the numcodecs ``Blosc`` that zarr's ``blosc`` codec compresses each inner chunk with
    (configured exactly as zarr configures it), and the inner chunks in zarr's order within a
    shard (Morton order)."""

    shard_shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fill_value: Any
    blosc: Any
    order: tuple[tuple[int, ...], ...]


def shard_chain(array: zarr.Array) -> ShardChain | None:
    """The :class:`ShardChain` of ``array`` when its codecs are exactly the chain that
    :mod:`emb.store._shard_bytes` frames: one ``sharding_indexed`` codec, its index at the end
    (little-endian ``bytes``, then ``crc32c``), each inner chunk ``bytes``, then a ``blosc``
    whose type size and shuffle are given, then ``crc32c``; else None (zarr writes the array)."""
    meta = array.metadata
    codecs = getattr(meta, "codecs", ())
    if len(codecs) != 1 or not isinstance(codecs[0], ShardingCodec):
        return None
    sharding = codecs[0]
    inner, index = tuple(sharding.codecs), tuple(sharding.index_codecs)
    if (
        sharding.index_location != ShardingCodecIndexLocation.end
        or len(inner) != 3
        or not isinstance(inner[0], BytesCodec)
        or not isinstance(inner[1], BloscCodec)
        or not isinstance(inner[2], Crc32cCodec)
        or len(index) != 2
        or not isinstance(index[0], BytesCodec)
        or not isinstance(index[1], Crc32cCodec)
        or (index[0].endian is not None and index[0].endian.value != "little")
        or inner[1]._tunable_attrs  # typesize or shuffle left to zarr's choice
    ):
        return None
    shard_shape = tuple(int(n) for n in meta.chunk_grid.chunk_shape)  # type: ignore[attr-defined]
    chunk_shape = tuple(int(n) for n in sharding.chunk_shape)
    if len(chunk_shape) != len(shard_shape) or any(
        c < 1 or s % c for s, c in zip(shard_shape, chunk_shape, strict=True)
    ):
        return None
    dtype = np.dtype(array.dtype)
    endian = inner[0].endian
    if dtype.itemsize > 1 and endian is not None:
        dtype = dtype.newbyteorder("<" if endian.value == "little" else ">")
    per_shard = tuple(s // c for s, c in zip(shard_shape, chunk_shape, strict=True))
    return ShardChain(
        shard_shape=shard_shape, chunk_shape=chunk_shape, dtype=dtype,
        fill_value=meta.fill_value, blosc=inner[1]._blosc_codec,
        order=tuple(morton_order_iter(per_shard)),
    )


def only_bytes_codec(array: zarr.Array) -> bool:
    """Whether ``array`` is a zarr v3 array whose only codec is ``bytes`` (each chunk object
    holds its values' bytes, nothing more); False for anything that cannot be told."""
    try:
        meta = array.metadata
        return meta.zarr_format == 3 and len(meta.codecs) == 1 and isinstance(  # type: ignore[union-attr]
            meta.codecs[0], BytesCodec  # type: ignore[union-attr]
        )
    except (AttributeError, TypeError, ValueError):
        return False


# -- arrays -----------------------------------------------------------------------------------------
def chunk_key(array: zarr.Array, coords: tuple[int, ...]) -> str:
    """The key of ``array``'s chunk (its shard, for a sharded array) at grid ``coords``, relative
    to the array's own path (``c/3/0/0/0``)."""
    return array.metadata.encode_chunk_key(coords)


def dimension_names(array: zarr.Array) -> tuple[str | None, ...]:
    """The names of ``array``'s dimensions as its metadata records them (empty: none)."""
    return tuple(getattr(array.metadata, "dimension_names", None) or ())


def arrays_from_metadata(
    zstore: Any, metas: Mapping[str, dict[str, Any]]
) -> list[zarr.Array | Exception]:
    """The array at each path of ``metas`` opened read-only from its metadata document, read
    already (what ``zarr.open_array(zstore, path=path, mode="r", zarr_format=3)`` does after
    reading it), or the error opening it raised; all in one round trip to zarr's event loop."""

    async def one(path: str, meta: dict[str, Any]) -> zarr.Array:
        store_path = await make_store_path(zstore, path=path, mode="r")
        return zarr.Array(AsyncArray(metadata=meta, store_path=store_path))  # type: ignore[arg-type]

    async def every() -> list[zarr.Array | Exception]:
        return list(await asyncio.gather(*(one(p, m) for p, m in metas.items()),
                                         return_exceptions=True))

    if not metas:
        return []
    found = _sync(every())
    for item in found:  # KeyboardInterrupt and the like are not an array's problem
        if isinstance(item, BaseException) and not isinstance(item, Exception):
            raise item
    return found


# -- stores -----------------------------------------------------------------------------------------
def is_open(zstore: Any) -> bool:
    """Whether zarr has opened ``zstore`` (a zip store opens lazily, on its first use)."""
    return bool(getattr(zstore, "_is_open", False))


def opened(zstore: Any) -> Any:
    """``zstore``, opened: zip stores open lazily and list nothing before; an open store's
    ``_ensure_open`` does nothing but costs a round trip to zarr's event loop (17 of them a
    shard worker), so it is called only on a store not open yet."""
    if not is_open(zstore):
        _sync(zstore._ensure_open())
    return zstore


def zip_member_sizes(zstore: zarr.storage.ZipStore) -> dict[str, int]:
    """The size of each member of an opened zip store, from its central directory (no read)."""
    return {info.filename: info.file_size for info in zstore._zf.infolist()}


class ZipFileStore(zarr.storage.ZipStore):
    """zarr's read-only ``ZipStore`` over a zip that :meth:`open_zip` opens (a file object of
    fsspec's, say), not over a local path; the file is closed with the store."""

    def open_zip(self) -> tuple[IO[bytes], zipfile.ZipFile]:
        """The file object the zip is read from and the zip opened on it."""
        raise NotImplementedError

    def _sync_open(self) -> None:
        if self._is_open:
            raise ValueError("store is already open")
        self._lock = threading.RLock()
        self._file, self._zf = self.open_zip()
        self._is_open = True

    def close(self) -> None:
        super().close()
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()


class ReadWrapper(zarr.storage.WrapperStore[Any]):
    """zarr's ``WrapperStore`` for a view that answers reads itself: :attr:`inner` is the
    wrapped store, :meth:`rewrapped` the same view over another one (zarr rewraps a store it
    opens read-only or enters), and every batched read goes through :meth:`get` (zarr's wrapper
    hands a batch to the wrapped store, past the view)."""

    @property
    def inner(self) -> Any:
        """The wrapped store."""
        return self._store

    def rewrapped(self, store: Any) -> ReadWrapper:
        """This view over ``store``."""
        raise NotImplementedError

    def _with_store(self, store: Any) -> ReadWrapper:
        return self.rewrapped(store)

    async def _get_many(
        self, requests: Iterable[tuple[str, BufferPrototype, ByteRequest | None]]
    ) -> AsyncGenerator[tuple[str, Buffer | None], None]:
        for key, proto, byte_range in requests:
            yield key, await self.get(key, proto, byte_range)

