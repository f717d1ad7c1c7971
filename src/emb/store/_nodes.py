"""Low-level reads of a zarr store's objects, without zarr's own hierarchy walk.

emb lists a store's groups itself (only names that can be group names, so lock files and foreign
files are never touched), reads metadata documents as JSON (so a damaged ``zarr.json`` is a
report, not a traceback), and sizes and hashes objects for the manifest.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import traceback
import uuid
import zipfile
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import zarr.storage

from emb.errors import CorruptStoreError, EmbError, StoreError
from emb.store._zarr import (
    CODEC_CODE,
    STORAGE_CODE,
    as_buffer,
    opened,
    prototype,
    sync,
    zip_member_sizes,
)

__all__ = [
    "BadMetadata",
    "DamagedObject",
    "child_names",
    "crc32",
    "crc32_update",
    "damage_reported",
    "digest",
    "is_damage",
    "list_prefix",
    "local_root",
    "named_children",
    "object_sizes",
    "read_json",
    "read_jsons",
    "read_many",
    "put_object",
    "write_parts",
]

_CONCURRENCY = 32


class BadMetadata(ValueError):
    """A metadata document exists but is not a JSON object (the message says what it holds)."""


class DamagedObject(ValueError):
    """An object exists but its bytes cannot be read back (a zip member that fails its CRC-32,
    a compressed member cut short)."""


#: what reading a damaged zip member raises (a stored member: BadZipFile "Bad CRC-32"; a
#: deflated one: zlib.error, or EOFError when it ends early)
_ZIP_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError)
#: the code that decodes stored bytes: an error raised there means the bytes do not decode
_DECODERS = re.compile(r"(^|[/\\])(numcodecs|" + CODEC_CODE + r")[/\\]")


async def _collect(items: AsyncIterator[str]) -> list[str]:
    return [item async for item in items]


def local_root(zstore: Any) -> Path | None:
    """The directory whose files are the objects of a local store (zarr's ``LocalStore``), else
    None.  Small objects there (done-markers, digest records) are read and written as the
    store itself reads and writes them (a file's bytes; a ``.partial`` file renamed over it), in
    the calling thread: a round trip to zarr's event loop costs more than the file (0.65 ms to
    set a one-byte marker through the array against 0.09 ms; 2-5 ms to read 40 markers against
    0.5 ms)."""
    if not isinstance(zstore, zarr.storage.LocalStore):
        return None
    # not opened first: opening checks that the directory exists (a read finds no file where it
    # does not) or makes it (a write makes its directories)
    return Path(zstore.root)


def child_names(zstore: Any, prefix: str = "") -> list[str]:
    """Names directly under ``prefix`` (objects and sub-prefixes), sorted; temporary files a
    killed write left behind (``*.partial``, see zarr's LocalStore) are not names of anything."""
    names = sync(_collect(opened(zstore).list_dir(prefix)))
    # an HTTP server's index page names sub-directories with a trailing "/" ("vast/")
    return sorted({n.rstrip("/") for n in names if not n.endswith(".partial")})


def named_children(zstore: Any, prefix: str, *, starts: str, ends: str) -> list[str]:
    """The names directly under ``prefix`` that start with ``starts`` and end with ``ends``
    (:func:`child_names`); none where the store cannot list (HTTP) or ``prefix`` is unreadable."""
    try:
        names = child_names(zstore, prefix)
    except (OSError, NotImplementedError, StoreError, ValueError, KeyError):
        return []
    return [n for n in names if n.startswith(starts) and n.endswith(ends)]


def list_prefix(zstore: Any, prefix: str) -> list[str]:
    """Every object key under ``prefix`` (a group path, without trailing ``/``)."""
    keys = sync(_collect(opened(zstore).list_prefix(prefix.rstrip("/") + "/")))
    return sorted(k for k in keys if k.startswith(prefix.rstrip("/") + "/"))


async def _get(zstore: Any, key: str) -> bytes | None | DamagedObject:
    """An object's bytes, None when it does not exist, or the :class:`DamagedObject` (its
    cause set) when it exists but cannot be read back; ``zstore`` opened."""
    try:
        buffer = await zstore.get(key, prototype=prototype())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, KeyError):
        return None
    except _ZIP_DAMAGE as err:
        damaged = DamagedObject(f"{key} cannot be read back: {type(err).__name__}: {err}")
        damaged.__cause__ = err
        return damaged
    return None if buffer is None else buffer.to_bytes()


def read_many(zstore: Any, keys: Sequence[str]) -> list[bytes | None | DamagedObject]:
    """:func:`_get` of each key, in one round trip to zarr's event loop, up to
    :data:`_CONCURRENCY` reads at once (a local store's files: read in turn, here)."""
    root = local_root(zstore)
    if root is not None:
        return [_read_file(root / key) for key in keys]
    zstore = opened(zstore)

    async def every() -> list[bytes | None | DamagedObject]:
        gate = asyncio.Semaphore(_CONCURRENCY)

        async def one(key: str) -> bytes | None | DamagedObject:
            async with gate:
                return await _get(zstore, key)

        return list(await asyncio.gather(*(one(key) for key in keys)))

    return sync(every())


def _read_file(path: Path) -> bytes | None:
    """A local store's object as its ``get`` reads it: None where there is no file."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def read_bytes(zstore: Any, key: str) -> bytes | None:
    """An object's bytes, or None when it does not exist.

    Raises
    ------
    DamagedObject
        It exists but cannot be read back (a zip member whose bytes changed).
    """
    root = local_root(zstore)
    raw = _read_file(root / key) if root is not None else sync(_get(opened(zstore), key))
    if isinstance(raw, DamagedObject):
        raise raw
    return raw


def read_json(zstore: Any, key: str) -> dict[str, Any] | None:
    """A metadata document as a dict; None when missing.

    Raises
    ------
    BadMetadata
        It exists but does not hold a JSON object, or cannot be read back.
    """
    try:
        raw = read_bytes(zstore, key)
    except DamagedObject as err:
        raise BadMetadata(str(err)) from err
    return _json_document(key, raw)


def read_jsons(zstore: Any, keys: Sequence[str]) -> list[dict[str, Any] | None | BadMetadata]:
    """:func:`read_json` of each key, read all at once (:func:`read_many`: one round trip
    to zarr's event loop, the reads concurrent): per key its document, None when missing, or the
    :class:`BadMetadata` that :func:`read_json` would raise (returned, so that the caller meets
    the problems in the order of ``keys``)."""
    out: list[dict[str, Any] | None | BadMetadata] = []
    for key, raw in zip(keys, read_many(zstore, keys), strict=True):
        if isinstance(raw, DamagedObject):
            out.append(BadMetadata(str(raw)))
            continue
        try:
            out.append(_json_document(key, raw))
        except BadMetadata as err:
            out.append(err)
    return out


def _json_document(key: str, raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        head = raw[:40]
        raise BadMetadata(
            f"{key} is not valid JSON ({len(raw)} bytes, starting {head!r}): {err}"
        ) from err
    if not isinstance(doc, dict):
        raise BadMetadata(f"{key} holds a JSON {type(doc).__name__}, not an object")
    return doc


def object_sizes(zstore: Any, keys: Sequence[str]) -> dict[str, int | None]:
    """Size in bytes of each key (None when missing): one stat, HEAD or zip entry per key."""
    root = local_root(zstore)
    if root is not None:  # the stat the store's getsize makes, here
        return {k: _file_size(root / k) for k in keys}
    zstore = opened(zstore)
    if isinstance(zstore, zarr.storage.ZipStore):
        entries = zip_member_sizes(zstore)
        return {k: entries.get(k) for k in keys}

    async def one(key: str, gate: asyncio.Semaphore) -> int | None:
        async with gate:
            try:
                return int(await zstore.getsize(key))
            except (FileNotFoundError, KeyError, NotADirectoryError, IsADirectoryError):
                return None

    async def every() -> list[int | None]:
        gate = asyncio.Semaphore(_CONCURRENCY)
        return await asyncio.gather(*(one(k, gate) for k in keys))

    return dict(zip(keys, sync(every()), strict=True))


def _file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_parts(path: Path, parts: tuple[Any, ...], *, durable: bool = False) -> None:
    """Write ``parts`` as the file ``path`` the way zarr's ``LocalStore`` writes an object: into
    ``<path>.<random>.partial`` beside it, then renamed over it (a reader sees the old object or
    the new one, and a killed write leaves a ``.partial`` the next run removes); one ``writev``
    of the parts, with no join into one buffer first.

    ``durable``: the file's bytes are on the disk before the rename, and the rename before this
    returns (``fsync`` of the file, then of its directory), so that what is written after it (a
    block's done-marker) cannot outlive it in a power loss or a crash of the machine."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{uuid.uuid4().hex}.partial")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            views = [memoryview(p).cast("B") for p in parts]
            while views:
                written = os.writev(fd, views[:1024])
                while views and written >= len(views[0]):
                    written -= len(views[0])
                    views.pop(0)
                if views and written:
                    views[0] = views[0][written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(path)
        if durable:
            _sync_directory(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _sync_directory(directory: Path) -> None:
    """``fsync`` a directory (its entries: a rename into it), where the system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # a system without directory handles (Windows): nothing more can be done
        return
    try:
        os.fsync(fd)
    except OSError as err:  # some file systems refuse fsync on a directory (EINVAL)
        if err.errno not in (errno.EINVAL, errno.EBADF, errno.EACCES):
            raise
    finally:
        os.close(fd)


def put_object(zstore: Any, key: str, data: bytes) -> None:
    """Write object ``key`` as the store writes one: into a local store's directory as zarr's
    ``LocalStore`` does (a ``.partial`` file renamed over it, see :func:`local_root`), elsewhere
    through the store (one PUT)."""
    root = local_root(zstore)
    if root is not None and not zstore.read_only:
        write_parts(root / key, (data,))
    else:
        sync(zstore.set(key, as_buffer(data)))


def digest(data: bytes) -> str:
    """The manifest's checksum of an object: CRC-32 (zlib's, as zip files use), 8 hex digits.

    It is there to find accidental damage (a flipped bit, a torn or overwritten object: any
    error burst up to 32 bits, and a random one with probability 1 - 2**-32), not tampering; at
    ~1.5 GB/s it costs a few percent of an extraction on a small CPU, where sha256 (~0.3 GB/s
    on the same machine) cost 5%.
    """
    return crc32(data)


def crc32(data: Any) -> str:
    """:func:`digest` of any buffer (bytes, memoryview, a uint8 array): ISA-L's CRC-32 when it
    is installed (the same value, ~10x zlib's speed: 11 GB/s against 1.1 GB/s measured here),
    else zlib's."""
    return f"{_crc32(data):08x}"


def crc32_update(data: Any, value: int = 0) -> int:
    """The CRC-32 of :func:`crc32` continued over ``data`` from ``value`` (a running CRC of
    several buffers, equal to the CRC of their concatenation)."""
    return _crc32(data, value)


try:  # the 'corpus' extra installs ISA-L for gzip; its CRC-32 is zlib's, only faster
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - depends on the extras installed
    _crc32 = zlib.crc32


def digests(
    zstore: Any, keys: Iterable[str]
) -> dict[str, tuple[int, str] | DamagedObject | None]:
    """(size, checksum) of each key's bytes, None when missing, the error when its bytes cannot
    be read back; reads every byte, up to 32 objects at once (a suite's coordinate chunks and
    metadata documents were a finishing shard worker's 40 reads, one at a time)."""
    keys = list(dict.fromkeys(keys))
    return {
        key: raw if raw is None or isinstance(raw, DamagedObject) else (len(raw), digest(raw))
        for key, raw in zip(keys, read_many(zstore, keys), strict=True)
    }


def is_damage(err: BaseException) -> bool:
    """Whether ``err`` is what reading damaged stored bytes raises: a zip member failing its
    CRC-32, a checksum that does not match (zarr's crc32c codec), a decompressor refusing its
    input (blosc, zstd, zlib), or any error raised inside a codec's decoding (numcodecs, zarr's
    codecs; e.g. blosc's SystemError on a garbled header). Programming errors raised elsewhere
    (an analysis' own code) are not damage."""
    if isinstance(err, DamagedObject | zipfile.BadZipFile | zlib.error):
        return True
    if isinstance(err, MemoryError) or not isinstance(err, Exception):
        return False
    text = str(err).lower()
    if isinstance(err, ValueError) and "checksum" in text:
        return True
    if isinstance(err, RuntimeError) and "decompress" in text:
        return True
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return False
    innermost = frames[-1].filename
    if isinstance(err, EOFError) and innermost.endswith("zipfile.py"):
        return True
    return bool(_DECODERS.search(innermost))


def damage_text(err: BaseException) -> str:
    """What reading damaged bytes raised, in words: a checksum that does not match is said so
    (zarr's message quotes both checksums as raw bytes), other errors by their type and message
    with any raw bytes left out and cut to 200 characters."""
    text = str(err).rstrip(". ")
    if "checksum" in text.lower():
        return "its CRC-32C checksum does not match: the stored bytes changed"
    text = _RAW_BYTES.sub("…", text)
    return f"{type(err).__name__}: {text if len(text) <= 200 else text[:199] + '…'}"


#: a bytes literal in an error message (b'\xba…' or b"…")
_RAW_BYTES = re.compile(r"(?<!\w)b'(?:[^'\\]|\\.)*'" + r'|(?<!\w)b"(?:[^"\\]|\\.)*"')


def _read_failure(err: BaseException) -> bool:
    """An OSError raised while the store was read (a disk's I/O error, a connection lost)."""
    return isinstance(err, OSError) and any(
        re.search(r"(^|[/\\])(" + STORAGE_CODE + r"|fsspec|s3fs|aiohttp)[/\\]", f.filename)
        or f.filename.endswith("zipfile.py")
        for f in traceback.extract_tb(err.__traceback__)
    )


@contextlib.contextmanager
def damage_reported(locations: Sequence[str]) -> Iterator[None]:
    """Turn what reading the damaged data of one of ``locations`` raises inside the block (see
    :func:`is_damage`) into a :class:`~emb.errors.CorruptStoreError` naming the stores and
    ``emb validate --deep``, and an OSError of a read into a :class:`~emb.errors.StoreError`;
    any other error passes unchanged.

    Raises
    ------
    CorruptStoreError
        Stored bytes do not decode.
    StoreError
        The store could not be read (I/O error).
    """
    try:
        yield
    except EmbError:
        raise
    except Exception as err:
        which = ", ".join(locations) or "the store"
        advice = (f"'emb validate --deep {locations[0]}'" if len(locations) == 1
                  else "'emb validate --deep STORE' on each store")
        if is_damage(err):
            raise CorruptStoreError(
                f"the stored data of {which} is damaged: reading it failed ({damage_text(err)}); "
                f"run {advice} to find the damaged objects, and "
                "restore them from a copy or re-extract the suite with --overwrite"
            ) from err
        if _read_failure(err):
            raise StoreError(
                f"reading {which} failed: {type(err).__name__}: {str(err).rstrip('. ')}; if the store is reachable "
                f"and this persists, run {advice}"
            ) from err
        raise
